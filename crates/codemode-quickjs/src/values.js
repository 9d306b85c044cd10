// How values leave and enter the sandbox (docs/values.md has the table). Called once by the
// glue with what it needs; returns the encoders and revivers, which stay in the glue's
// closure. Three ways out:
// - WIRE (connector arguments, the SDK's inputs): JSON, as JSON.stringify writes it (toJSON
//   honoured, so a Date is its ISO text; undefined properties left out; -0 is 0), plus the
//   BigInt and Uint8Array envelopes. What JSON would silently change (a Map, NaN, undefined
//   in an array…) is refused with its path and the fix.
// - STEP (a codemode.step value, kept in the log): every such value tagged, so that the first
//   pass and every replay hand the code the same value: `{"$date": iso}`, `{"$map": [[k, v]]}`…
// - RESULT (the final result, to the model): JSON as JSON.stringify writes it (a Date is its
//   ISO text, -0 is 0, undefined is left out of objects and null in arrays and at the top),
//   but what JSON would turn into something else (NaN, a Map, a Set…) is tagged as in STEP.
// Every value is refused past MAX_DEPTH levels (what the log can read back) and at a cycle.
(function (b64encode, b64decode, maxLength) {
  "use strict";
  const WIRE = 0, STEP = 1, RESULT = 2;
  // Keep in step with values.rs (`MAX_DEPTH`, `MAX_BIGINT_DIGITS`); a test there checks.
  const MAX_DEPTH = 127;
  const MAX_BIGINT_DIGITS = 10000;
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const keys = Object.keys;
  const isArray = Array.isArray;
  const getPrototypeOf = Object.getPrototypeOf;
  const defineProperty = Object.defineProperty;
  const is = Object.is;
  const apply = Reflect.apply;
  const ObjectProto = Object.prototype;
  const ArrayProto = Array.prototype;
  const U8 = Uint8Array;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const StringCtor = String;
  const BigIntCtor = BigInt;
  const DateCtor = Date;
  const MapCtor = Map;
  const SetCtor = Set;
  const ErrorCtor = Error;
  const RegExpCtor = RegExp;
  const isWellFormed = String.prototype.isWellFormed;
  const sliceText = String.prototype.slice;
  const charCodeAt = String.prototype.charCodeAt;
  const toISOString = Date.prototype.toISOString;
  const getTime = Date.prototype.getTime;
  const mapEntries = Map.prototype.entries;
  const setValues = Set.prototype.values;
  const arrayFrom = Array.from;
  const TypedProto = getPrototypeOf(U8.prototype);
  const TypedArray = TypedProto.constructor;
  const typedTag = Object.getOwnPropertyDescriptor(TypedProto, Symbol.toStringTag).get;
  const typedKinds = { __proto__: null };
  for (const name of ["Int8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array", "Float16Array", "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array"]) {
    if (typeof globalThis[name] === "function") typedKinds[name] = globalThis[name];
  }
  const errorKinds = { __proto__: null, Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError };
  // Objects that hold no data a copy could carry, by their `Symbol.toStringTag` (the glue's
  // WeakRef and FinalizationRegistry replace the engine's, so no constructor would do):
  // refused in every direction.
  const toStringTag = Symbol.toStringTag;
  const opaque = {
    __proto__: null,
    Promise: ["a Promise", "await it first (await the call, or Promise.all for several)"],
    WeakMap: ["a WeakMap", "copy what you need into a plain object"],
    WeakSet: ["a WeakSet", "copy what you need into an array"],
    WeakRef: ["a WeakRef", "pass what it holds (ref.deref())"],
    FinalizationRegistry: ["a FinalizationRegistry", "pass plain data instead"],
    ArrayBuffer: ["an ArrayBuffer", "wrap it: new Uint8Array(buffer)"],
    SharedArrayBuffer: ["a SharedArrayBuffer", "wrap it: new Uint8Array(buffer)"],
    DataView: ["a DataView", "pass new Uint8Array(view.buffer, view.byteOffset, view.byteLength)"],
  };
  // The tags of STEP and RESULT values; in a STEP value, a plain object that looks like one is
  // escaped.
  const TAGS = { __proto__: null, $undefined: true, $hole: true, $number: true, $bigint: true, $bytes: true, $date: true, $map: true, $set: true, $error: true, $regexp: true, $escape: true };
  for (const name in typedKinds) TAGS["$" + name] = true;
  const VERB = ["cannot be sent to a connector", "cannot be recorded by codemode.step", "cannot be returned"];

  const identifier = /^[A-Za-z_$][\w$]*$/;
  const regexTest = RegExpCtor.prototype.test;
  // `label.items[3]["a b"]`: how code would reach the value under `names[1..count]` (each
  // in the holder before it), then under `key` in `holders[count - 1]` when one is given.
  function pathText(label, holders, names, count, key) {
    let out = label;
    const last = key === undefined ? count : count + 1;
    for (let i = 1; i < last; i++) {
      // A path past 16 steps shows its first and last 6.
      if (last > 17 && i === 7) {
        out += `…(${last - 13} more)…`;
        i = last - 7;
        continue;
      }
      const name = i < count ? names[i] : key;
      if (isArray(holders[i - 1])) out += `[${name}]`;
      else if (apply(regexTest, identifier, [name])) out += `.${name}`;
      else out += `[${stringify(name)}]`;
    }
    return out;
  }
  let bigintLimit = null;
  function bigintText(value, key) {
    if (bigintLimit === null) bigintLimit = 10n ** BigIntCtor(MAX_BIGINT_DIGITS);
    if (value >= bigintLimit || value <= -bigintLimit) refuse(`a BigInt of more than ${MAX_BIGINT_DIGITS} digits`, "pass it as a hexadecimal string (value.toString(16)), which converts in linear time", key);
    return StringCtor(value);
  }
  function numberTag(value) {
    if (value !== value) return "NaN";
    if (value === Infinity) return "Infinity";
    if (value === -Infinity) return "-Infinity";
    if (value === 0 && is(value, -0)) return "-0";
    return null;
  }
  // A property of an Error, as text; a getter that throws reads as what it threw.
  function errorPart(error, name) {
    try {
      return StringCtor(error[name]);
    } catch (e) {
      return `[the ${name} getter threw]`;
    }
  }

  // The encoding under way, in variables the module-level functions below read, so that an
  // encoding makes no closures and no objects of its own. A getter or `toJSON` that encodes
  // again (a connector call from inside one) saves them and restores them when it is done.
  let encoding = false;
  let curMode = WIRE, curLabel = "", curTarget, curMethod, curEscaping = null;
  // The objects being written, outermost first, `depth` of them (entries past it are stale):
  // what is written (the replacer's `this` when it writes their members), the code's own
  // object (for cycles), and its key.
  let holders = [], raws = [], names = [], depth = 0;
  const call = Function.prototype.call.bind(Function.prototype.call);

  // Encodes `value` as JSON text for `mode`; `label` names the value in errors ("args"), and
  // `target` (with `method`, when given, as `target.method`) what it is sent to
  // ("tasks.create"); both are spelled only for an error.
  function encode(value, mode, label, target, method) {
    const outer = encoding ? [curMode, curLabel, curTarget, curMethod, curEscaping, holders, raws, names, depth] : null;
    if (outer !== null) {
      holders = [];
      raws = [];
      names = [];
    }
    encoding = true;
    depth = 0;
    curMode = mode;
    curLabel = label;
    curTarget = target;
    curMethod = method;
    curEscaping = null;
    try {
      const text = stringify(value, replacer);
      if (text === undefined) return mode === STEP ? '{"$undefined":0}' : "null";
      return text;
    } finally {
      if (outer === null) {
        encoding = false;
        // Nothing of the code's is held past the encoding.
        for (let i = 0; i < holders.length && holders[i] !== undefined; i++) {
          holders[i] = undefined;
          raws[i] = undefined;
          names[i] = undefined;
        }
        curLabel = "";
        curTarget = undefined;
        curMethod = undefined;
        curEscaping = null;
      } else {
        [curMode, curLabel, curTarget, curMethod, curEscaping, holders, raws, names, depth] = outer;
      }
    }
  }
  // What the value under way cannot be: "cannot be sent to a connector (tasks.create)".
  function verbText() {
    if (curTarget === undefined) return VERB[curMode];
    const name = curMethod === undefined ? curTarget : `${curTarget}.${curMethod}`;
    return call(sliceText, name, 0, 9) === "codemode." ? `cannot be passed to ${name}` : `${VERB[curMode]} (${name})`;
  }
  // Throws the refusal of what is under `key` in the object being written (the value itself
  // when nothing is being written yet).
  function refuse(what, fix, key) {
    const path = depth === 0 ? curLabel : pathText(curLabel, holders, names, depth, key);
    throw new TypeErrorCtor(`${path}: ${what} ${verbText()}; ${fix}`);
  }
  function replacer(key, value) {
    const mode = curMode;
    // Leave the objects finished since the last call: `this` is the one being written.
    while (depth > 0 && holders[depth - 1] !== this) depth--;
    if (!call(isWellFormed, key)) refuse("a key holding a lone UTF-16 surrogate (half of a character)", "call .toWellFormed() on the key", key);
    let raw = value;
    if (value === null || (mode === STEP && typeof value === "string")) {
      // toJSON turned a Date into text (or null, for an invalid one): the Date itself counts.
      const own = this[key];
      if (own instanceof DateCtor) raw = own;
    }
    switch (typeof raw) {
      case "string":
        if (!call(isWellFormed, raw)) refuse("a string holding a lone UTF-16 surrogate (half of a character, often left by slicing a string through an emoji)", "call .toWellFormed() on it, or slice with Array.from(text)", key);
        return raw;
      case "number": {
        const tag = numberTag(raw);
        if (tag === null || (tag === "-0" && mode !== STEP)) return raw;
        if (mode === WIRE) refuse(tag, "JSON has no such number (it would arrive as null): pass null or a string, or check the computation that made it", key);
        return descend({ $number: tag }, raw, key);
      }
      case "bigint":
        return descend({ $bigint: bigintText(raw, key) }, raw, key);
      case "undefined":
        if (isArray(this)) {
          const hole = !(key in this);
          if (mode === WIRE) {
            if (hole) refuse("a hole of a sparse array", "fill it with null (Array.from(list, x => x ?? null)) or leave it out", key);
            refuse("undefined in an array", "JSON has none (it would arrive as null): use null, or leave it out with .filter(x => x !== undefined)", key);
          }
          // The model reads `null` there, as JSON has it.
          if (mode === RESULT) return null;
          return descend(hole ? { $hole: 0 } : { $undefined: 0 }, raw, key);
        }
        if (mode === STEP) return descend({ $undefined: 0 }, raw, key);
        return undefined;
      case "function":
        return refuse("a function", "only data crosses: call it and pass what it returns", key);
      case "symbol":
        return refuse("a symbol", "pass its description as a string (symbol.description)", key);
      case "object": {
        if (raw === null) return null;
        // Plain data, the common case, recorded here as `descend` would (which refuses it
        // when it is too deep or a cycle).
        const proto = getPrototypeOf(raw);
        if (mode !== STEP && (proto === ObjectProto || proto === null || (proto === ArrayProto && raw.length <= maxLength))) {
          if (depth >= MAX_DEPTH) return descend(raw, raw, key);
          for (let i = 0; i < depth; i++) if (raws[i] === raw) return descend(raw, raw, key);
          holders[depth] = raw;
          raws[depth] = raw;
          names[depth] = key;
          depth++;
          return raw;
        }
        return object(raw, key, proto);
      }
      default:
        return raw;
    }
  }
  // Records `out` (what is written for `raw`, under `key`) as the object now being written.
  function descend(out, raw, key) {
    if (depth >= MAX_DEPTH) {
      refuse(`a value nested more than ${MAX_DEPTH} levels deep (arrays and objects inside each other, counting the level a tag such as {"$map": [...]} adds)`, "flatten it, or pass the deep part in pieces", key);
    }
    if (typeof raw === "object") {
      for (let i = 0; i < depth; i++) {
        if (raws[i] === raw) {
          const ancestor = pathText(curLabel, holders, names, i + 1, undefined);
          refuse(`a value that contains itself (a cycle: it is ${ancestor})`, "pass a copy without the back reference (an id instead of the object, say)", key);
        }
      }
    }
    holders[depth] = out;
    raws[depth] = raw;
    names[depth] = key;
    depth++;
    return out;
  }
  function object(raw, key, proto) {
    const mode = curMode;
    if (proto === ObjectProto || proto === null) {
      // Only a step's value is read back, so only there must a look-alike be told apart.
      if (mode === STEP) {
        if (curEscaping === raw) {
          curEscaping = null;
        } else {
          const own = keys(raw);
          if (own.length === 1 && TAGS[own[0]] === true) {
            curEscaping = raw;
            return descend({ $escape: raw }, { escaped: raw }, key);
          }
        }
      }
      return descend(raw, raw, key);
    }
    if (proto === ArrayProto) {
      if (raw.length > maxLength) {
        const path = depth === 0 ? curLabel : pathText(curLabel, holders, names, depth, key);
        throw new RangeErrorCtor(`${path}: an array of length ${raw.length} was refused: no array that fits in the memory limit is longer than ${maxLength}, and writing this one would loop that many times in one step; pass the indexes that exist (Object.keys)`);
      }
      return descend(raw, raw, key);
    }
    if (raw instanceof U8) return descend({ $bytes: b64encode(raw) }, raw, key);
    if (raw instanceof DateCtor) {
      const time = apply(getTime, raw, []);
      if (mode === WIRE && time !== time) refuse("an invalid Date (new Date could not read its input)", "check the text or number it was made from", key);
      if (mode !== STEP && time === time) return apply(toISOString, raw, []);
      return descend({ $date: time !== time ? null : apply(toISOString, raw, []) }, raw, key);
    }
    if (raw instanceof MapCtor) {
      if (mode === WIRE) refuse("a Map", "convert it with Object.fromEntries(map) (string keys) or [...map] (pairs)", key);
      return descend({ $map: arrayFrom(apply(mapEntries, raw, [])) }, raw, key);
    }
    if (raw instanceof SetCtor) {
      if (mode === WIRE) refuse("a Set", "convert it with [...set]", key);
      return descend({ $set: arrayFrom(apply(setValues, raw, [])) }, raw, key);
    }
    if (raw instanceof TypedArray) {
      const kind = apply(typedTag, raw, []);
      if (mode === WIRE) refuse(`a ${kind}`, "convert it with Array.from(array)", key);
      return descend({ ["$" + kind]: arrayFrom(raw) }, raw, key);
    }
    if (raw instanceof ErrorCtor) {
      if (mode === WIRE) refuse("an Error", "pass {name: e.name, message: e.message}", key);
      return descend({ $error: { name: errorPart(raw, "name"), message: errorPart(raw, "message") } }, raw, key);
    }
    if (raw instanceof RegExpCtor) {
      if (mode === WIRE) refuse("a RegExp", "pass its text (re.source) and flags (re.flags)", key);
      return descend({ $regexp: [raw.source, raw.flags] }, raw, key);
    }
    const kind = raw[toStringTag];
    if (typeof kind === "string" && opaque[kind] !== undefined) refuse(opaque[kind][0], opaque[kind][1], key);
    // Any other object (a class instance, a boxed primitive) is written as JSON writes it.
    return descend(raw, raw, key);
  }

  // Whether `text` is a BigInt's own decimal form ("0", "-12"), which it turns back into.
  function canonicalBigInt(text) {
    const start = text[0] === "-" ? 1 : 0;
    if (text.length === start || (text[start] === "0" && text.length > 1)) return false;
    for (let i = start; i < text.length; i++) {
      const c = apply(charCodeAt, text, [i]);
      if (c < 48 || c > 57) return false;
    }
    return true;
  }
  function bigintOf(text) {
    const digits = text.length - (text[0] === "-" ? 1 : 0);
    if (digits > MAX_BIGINT_DIGITS) {
      throw new RangeErrorCtor(`a value holds {"$bigint": ...} of ${digits} digits; at most ${MAX_BIGINT_DIGITS} digits become a BigInt: send so large a number as a hexadecimal string and convert it with BigInt("0x" + text)`);
    }
    return BigIntCtor(text);
  }

  // Revives the BigInt and Uint8Array envelopes in JSON a connector returned (in place).
  // An escaped object ({"$escape": ...}, which only a step writes) is left for `reviveStep`.
  function reviveWire(value) {
    if (value === null || typeof value !== "object") return value;
    if (isArray(value)) {
      for (let i = 0; i < value.length; i++) value[i] = reviveWire(value[i]);
      return value;
    }
    const names = keys(value);
    if (names.length === 1) {
      const only = value[names[0]];
      if (names[0] === "$bigint" && typeof only === "string" && canonicalBigInt(only)) return bigintOf(only);
      if (names[0] === "$bytes" && typeof only === "string") {
        const bytes = b64decode(only);
        if (bytes !== null) return bytes;
      }
      if (names[0] === "$escape") return value;
    }
    for (const name of names) {
      const before = value[name];
      const after = reviveWire(before);
      if (after !== before) defineProperty(value, name, { value: after, writable: true, enumerable: true, configurable: true });
    }
    return value;
  }

  const HOLE = {};
  // Turns a tagged value (parsed, and possibly through `reviveWire` already) back into what
  // the step returned.
  function reviveStep(value) {
    if (value === null || typeof value !== "object") return value;
    if (isArray(value)) {
      let holes = false;
      for (let i = 0; i < value.length; i++) {
        const item = reviveStep(value[i]);
        if (item === HOLE) holes = true;
        value[i] = item;
      }
      if (holes) {
        for (let i = 0; i < value.length; i++) if (value[i] === HOLE) delete value[i];
      }
      return value;
    }
    if (getPrototypeOf(value) !== ObjectProto) return value;
    const names = keys(value);
    if (names.length === 1 && TAGS[names[0]] === true) {
      const tag = names[0];
      const only = value[tag];
      switch (tag) {
        case "$undefined": return undefined;
        case "$hole": return HOLE;
        case "$number":
          if (only === "NaN") return NaN;
          if (only === "Infinity") return Infinity;
          if (only === "-Infinity") return -Infinity;
          if (only === "-0") return -0;
          break;
        case "$bigint":
          if (typeof only === "string" && canonicalBigInt(only)) return bigintOf(only);
          break;
        case "$bytes":
          if (typeof only === "string") {
            const bytes = b64decode(only);
            if (bytes !== null) return bytes;
          }
          break;
        case "$date":
          if (only === null) return new DateCtor(NaN);
          if (typeof only === "string") return new DateCtor(only);
          break;
        case "$map":
          if (isArray(only)) {
            const map = new MapCtor();
            for (let i = 0; i < only.length; i++) {
              const pair = only[i];
              if (isArray(pair)) map.set(reviveStep(pair[0]), reviveStep(pair[1]));
            }
            return map;
          }
          break;
        case "$set":
          if (isArray(only)) {
            const set = new SetCtor();
            for (let i = 0; i < only.length; i++) set.add(reviveStep(only[i]));
            return set;
          }
          break;
        case "$error":
          if (only !== null && typeof only === "object") {
            const Kind = errorKinds[only.name] || ErrorCtor;
            const error = new Kind(StringCtor(only.message));
            if (errorKinds[only.name] === undefined) error.name = StringCtor(only.name);
            return error;
          }
          break;
        case "$regexp":
          if (isArray(only)) return new RegExpCtor(StringCtor(only[0]), StringCtor(only[1]));
          break;
        case "$escape":
          if (only !== null && typeof only === "object" && !isArray(only)) return reviveFields(only);
          break;
        default: {
          const Kind = typedKinds[tag.slice(1)];
          if (Kind !== undefined && isArray(only)) return new Kind(reviveStep(only));
        }
      }
    }
    return reviveFields(value);
  }
  function reviveFields(value) {
    for (const name of keys(value)) {
      const before = value[name];
      const after = reviveStep(before);
      if (after !== before) defineProperty(value, name, { value: after, writable: true, enumerable: true, configurable: true });
    }
    return value;
  }

  return {
    // JSON text of connector arguments and SDK inputs.
    encodeWire: (value, label, target, method) => encode(value, WIRE, label, target, method),
    // `encode` itself, with the mode of connector arguments: the hot path makes one call less.
    encode,
    WIRE,
    // Tagged JSON text of a step's value.
    encodeStep: (value, label) => encode(value, STEP, label),
    // Tagged JSON text of the final result.
    encodeResult: (value) => encode(value, RESULT, "result"),
    reviveWire,
    // The value a step's tagged JSON text (or its parsed form) stands for.
    reviveStep,
    decodeStep: (text) => reviveStep(parse(text)),
  };
})
