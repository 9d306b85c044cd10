// Installs the sandbox's globals. Called when a fresh context is made (before any pass):
// `console` and the SDK are installed then, and `declare` installs the connector namespaces
// (then, when the connectors are known ahead, or by the pass). `bind`, called once by the
// pass before the model's code, binds the host and the console sink.
// The helpers it returns stay in this closure and are not reachable from the model's code.
// `makeValues` is values.js (fresh.rs wraps the two scripts in one).
(function (b64encode, b64decode, sdkName, maxLength) {
  "use strict";
  // How values cross the boundary, made before the guards below change any built-in.
  const values = makeValues(b64encode, b64decode, maxLength);
  const { encode, WIRE } = values;
  // The pass's host, console and clock functions: the pass cuts these links when it ends.
  const link = { host: null, sink: null, now: null, mark: null, skip: null };
  let sdk = null;
  const g = globalThis;
  const stringify = JSON.stringify;
  const defineProperty = Object.defineProperty;
  const freeze = Object.freeze;
  const isArray = Array.isArray;
  const U8 = Uint8Array;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const StringCtor = String;
  const call = Function.prototype.call.bind(Function.prototype.call);
  // Built-ins that loop in C over an array-like's `length` never poll the interrupt, so a
  // sparse array or `{length: 2**53 - 1}` would run past the time limit. No array within the
  // memory limit is longer than `maxLength` (each element takes 16 bytes), so a longer length
  // is refused with a RangeError before the loop starts; shorter ones run the built-in itself.
  // The originals stay in this closure.
  const apply = Reflect.apply;
  const getPrototypeOf = Object.getPrototypeOf;
  const concatSpreadable = Symbol.isConcatSpreadable;
  const RangeErrorCtor = RangeError;
  function lengthOf(o) {
    const n = +o.length;
    return n > 0 ? n : 0;
  }
  function refusal(owner, name, length) {
    return new RangeErrorCtor(`${owner}.${name} over a length of ${length} was refused: the sandbox stops code only between steps, this one would loop ${length} times in one step, and no array that fits in the memory limit is longer than ${maxLength}. Loop over the indexes that exist (Object.keys) or use a shorter length.`);
  }
  function checkLength(owner, name, o) {
    if (o === null || o === undefined) return 0;
    const length = lengthOf(o);
    if (length > maxLength) throw refusal(owner, name, length);
    return length;
  }
  function spreadable(o) {
    if (o === null || (typeof o !== "object" && typeof o !== "function")) return false;
    const flag = o[concatSpreadable];
    return flag !== undefined ? !!flag : isArray(o);
  }
  // The array-likes a flat of `depth` levels would loop over, checked before it starts.
  function checkNested(name, o, depth) {
    if (!(depth >= 1)) return;
    const length = lengthOf(o);
    for (let i = 0; i < length; i++) {
      const item = o[i];
      if (isArray(item)) {
        checkLength("Array.prototype", name, item);
        checkNested(name, item, depth - 1);
      }
    }
  }
  const NATIVE_SORT_LENGTH = 65536;
  function defaultOrder(x, y) {
    const a = `${x}`;
    const b = `${y}`;
    return a < b ? -1 : b < a ? 1 : 0;
  }
  // Stack frames handed to `Error.prepareStackTrace` give no functions (as V8 does for strict
  // code, which all code here is): `getFunction` would hand out the glue's and the originals
  // of the guarded built-ins. One frame is enough to reach their prototype (a longer trace
  // costs a fresh context ~15 µs).
  {
    let sites = null;
    const limit = ErrorCtor.stackTraceLimit;
    ErrorCtor.stackTraceLimit = 1;
    ErrorCtor.prepareStackTrace = (_, frames) => {
      sites = frames;
      return "";
    };
    void new ErrorCtor().stack;
    ErrorCtor.prepareStackTrace = undefined;
    ErrorCtor.stackTraceLimit = limit;
    if (sites !== null && sites.length > 0) {
      const getFunction = { getFunction() { return undefined; } }.getFunction;
      defineProperty(getPrototypeOf(sites[0]), "getFunction", { value: getFunction, writable: true, enumerable: false, configurable: true });
    }
  }
  // The guarded built-ins: each wrapper has the original's name and length and is not a
  // constructor (a method, as built-ins are); it checks, then calls the original with the
  // same arguments (their count matters: `splice(0)` is not `splice(0, undefined)`).
  // Assigning keeps each property's attributes (writable, not enumerable, configurable).
  const ArrayProto = Array.prototype;
  const AP = "Array.prototype";
  // The originals, kept in this closure (plain variables: no object grows, no loop runs).
  const n_reverse = ArrayProto.reverse,
    n_copyWithin = ArrayProto.copyWithin,
    n_fill = ArrayProto.fill,
    n_splice = ArrayProto.splice,
    n_shift = ArrayProto.shift,
    n_unshift = ArrayProto.unshift,
    n_slice = ArrayProto.slice,
    n_join = ArrayProto.join,
    n_toLocaleString = ArrayProto.toLocaleString,
    n_toReversed = ArrayProto.toReversed,
    n_toSpliced = ArrayProto.toSpliced,
    n_with = ArrayProto.with,
    n_sort = ArrayProto.sort,
    n_toSorted = ArrayProto.toSorted,
    n_flat = ArrayProto.flat,
    n_flatMap = ArrayProto.flatMap,
    n_concat = ArrayProto.concat;
  const arrayGuards = {
    reverse() { checkLength(AP, "reverse", this); return apply(n_reverse, this, arguments); },
    copyWithin(target, start) { checkLength(AP, "copyWithin", this); return apply(n_copyWithin, this, arguments); },
    fill(value) { checkLength(AP, "fill", this); return apply(n_fill, this, arguments); },
    splice(start, deleteCount) { checkLength(AP, "splice", this); return apply(n_splice, this, arguments); },
    shift() { checkLength(AP, "shift", this); return apply(n_shift, this, arguments); },
    unshift(item) { checkLength(AP, "unshift", this); return apply(n_unshift, this, arguments); },
    slice(start, end) { checkLength(AP, "slice", this); return apply(n_slice, this, arguments); },
    join(separator) { checkLength(AP, "join", this); return apply(n_join, this, arguments); },
    toLocaleString() { checkLength(AP, "toLocaleString", this); return apply(n_toLocaleString, this, arguments); },
    toReversed() { checkLength(AP, "toReversed", this); return apply(n_toReversed, this, arguments); },
    toSpliced(start, skipCount) { checkLength(AP, "toSpliced", this); return apply(n_toSpliced, this, arguments); },
    with(index, value) { checkLength(AP, "with", this); return apply(n_with, this, arguments); },
    // Past NATIVE_SORT_LENGTH, the default order is spelled in JavaScript, so that the
    // comparisons poll the interrupt (shorter sorts take well under a second natively).
    sort(comparefn) {
      const length = checkLength(AP, "sort", this);
      const long = comparefn === undefined && length > NATIVE_SORT_LENGTH;
      return apply(n_sort, this, [long ? defaultOrder : comparefn]);
    },
    toSorted(comparefn) {
      const length = checkLength(AP, "toSorted", this);
      const long = comparefn === undefined && length > NATIVE_SORT_LENGTH;
      return apply(n_toSorted, this, [long ? defaultOrder : comparefn]);
    },
    flat() {
      checkLength(AP, "flat", this);
      const depth = arguments[0] === undefined ? 1 : +arguments[0];
      if (this !== null && this !== undefined) checkNested("flat", this, depth);
      return apply(n_flat, this, arguments);
    },
    flatMap(callback) {
      checkLength(AP, "flatMap", this);
      const thisArg = arguments[1];
      if (typeof callback !== "function") return apply(n_flatMap, this, [callback, thisArg]);
      return apply(n_flatMap, this, [function (value, index, array) {
        const mapped = apply(callback, thisArg, [value, index, array]);
        if (isArray(mapped)) checkLength(AP, "flatMap", mapped);
        return mapped;
      }]);
    },
    concat(item) {
      if (spreadable(this)) checkLength(AP, "concat", this);
      for (let i = 0; i < arguments.length; i++) {
        if (spreadable(arguments[i])) checkLength(AP, "concat", arguments[i]);
      }
      return apply(n_concat, this, arguments);
    },
  };
  ArrayProto.reverse = arrayGuards.reverse;
  ArrayProto.copyWithin = arrayGuards.copyWithin;
  ArrayProto.fill = arrayGuards.fill;
  ArrayProto.splice = arrayGuards.splice;
  ArrayProto.shift = arrayGuards.shift;
  ArrayProto.unshift = arrayGuards.unshift;
  ArrayProto.slice = arrayGuards.slice;
  ArrayProto.join = arrayGuards.join;
  ArrayProto.toLocaleString = arrayGuards.toLocaleString;
  ArrayProto.toReversed = arrayGuards.toReversed;
  ArrayProto.toSpliced = arrayGuards.toSpliced;
  ArrayProto.with = arrayGuards.with;
  ArrayProto.sort = arrayGuards.sort;
  ArrayProto.toSorted = arrayGuards.toSorted;
  ArrayProto.flat = arrayGuards.flat;
  ArrayProto.flatMap = arrayGuards.flatMap;
  ArrayProto.concat = arrayGuards.concat;
  // A typed array is real memory, but joining 32 MiB of it runs for seconds in C. Past
  // TYPED_JOIN_CHUNK elements it is joined a chunk at a time, each chunk natively, so the loop
  // between chunks polls the interrupt; the parts are joined once at the end.
  {
    const TYPED_JOIN_CHUNK = 128;
    const TypedProto = getPrototypeOf(Uint8Array.prototype);
    const nativeJoin = TypedProto.join;
    const subarray = TypedProto.subarray;
    const typedLength = Object.getOwnPropertyDescriptor(TypedProto, "length").get;
    const joinParts = ArrayProto.join;
    const wrapped = {
      join(separator) {
        const length = apply(typedLength, this, []);
        if (length <= TYPED_JOIN_CHUNK) return apply(nativeJoin, this, [separator]);
        const sep = separator === undefined ? "," : `${separator}`;
        const parts = [];
        for (let start = 0; start < length; start += TYPED_JOIN_CHUNK) {
          const chunk = apply(subarray, this, [start, start + TYPED_JOIN_CHUNK]);
          parts.push(apply(nativeJoin, chunk, [sep]));
        }
        return apply(joinParts, parts, [sep]);
      },
    }.join;
    TypedProto.join = wrapped;
    // With a comparator the engine sorts a typed array in C: once the interrupt stops the
    // comparator, the C sort goes on comparing every remaining pair (seconds, for millions of
    // elements) before it returns. Past NATIVE_SORT_LENGTH elements the sort is a merge sort
    // here, which the interrupt stops at once: stable, the comparator's NaN counts as 0, and
    // a comparator that throws leaves the array as it was, as the standard says.
    const nativeSort = TypedProto.sort;
    const nativeToSorted = TypedProto.toSorted;
    const setFrom = TypedProto.set;
    const typedTag = Object.getOwnPropertyDescriptor(TypedProto, Symbol.toStringTag).get;
    const kinds = {};
    for (const name of ["Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array", "Float16Array", "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array"]) {
      if (typeof g[name] === "function") kinds[name] = g[name];
    }
    // A sorted copy of the first `length` elements of `array`, of the same kind: a top-down
    // merge sort whose left halves are copied out to `spare` (half the length) and merged
    // back, so it takes one and a half times the array's memory, as the engine's sort does.
    function mergeSorted(array, length, comparefn) {
      const Kind = kinds[apply(typedTag, array, [])];
      const work = new Kind(length);
      apply(setFrom, work, [apply(subarray, array, [0, length])]);
      const spare = new Kind((length + 1) >>> 1);
      function sortRange(low, high) {
        if (high - low <= 8) {
          for (let i = low + 1; i < high; i++) {
            const x = work[i];
            let j = i;
            while (j > low && +comparefn(work[j - 1], x) > 0) {
              work[j] = work[j - 1];
              j--;
            }
            work[j] = x;
          }
          return;
        }
        const middle = low + ((high - low) >>> 1);
        sortRange(low, middle);
        sortRange(middle, high);
        const left = middle - low;
        apply(setFrom, spare, [apply(subarray, work, [low, middle])]);
        let i = 0, j = middle, k = low;
        while (i < left && j < high) {
          const x = spare[i], y = work[j];
          if (+comparefn(x, y) > 0) { work[k++] = y; j++; } else { work[k++] = x; i++; }
        }
        while (i < left) work[k++] = spare[i++];
      }
      sortRange(0, length);
      return work;
    }
    const sorts = {
      sort(comparefn) {
        const length = apply(typedLength, this, []);
        if (typeof comparefn !== "function" || length <= NATIVE_SORT_LENGTH) return apply(nativeSort, this, arguments);
        const sorted = mergeSorted(this, length, comparefn);
        // The comparator may have shrunk the array (a resizable buffer).
        const now = apply(typedLength, this, []);
        apply(setFrom, this, [now < length ? apply(subarray, sorted, [0, now]) : sorted]);
        return this;
      },
      toSorted(comparefn) {
        const length = apply(typedLength, this, []);
        if (typeof comparefn !== "function" || length <= NATIVE_SORT_LENGTH) return apply(nativeToSorted, this, arguments);
        return mergeSorted(this, length, comparefn);
      },
    };
    TypedProto.sort = sorts.sort;
    TypedProto.toSorted = sorts.toSorted;
  }
  // Garbage collection is not something a replay can see (a pass and its replay collect at
  // different moments), so nothing here depends on it: a `FinalizationRegistry` never calls
  // its cleanup callback, and a `WeakRef` holds its target (the standard allows both: a
  // cleanup callback may never be called, and a target need not be collected). The
  // engine's own would call back into the code, and so make host calls, whenever a
  // collection happened to run.
  {
    const WeakMapCtor = WeakMap;
    const weakGet = WeakMap.prototype.get;
    const weakHas = WeakMap.prototype.has;
    const weakSet = WeakMap.prototype.set;
    const MapCtor = Map;
    const mapGet = Map.prototype.get;
    const mapSet = Map.prototype.set;
    const mapDelete = Map.prototype.delete;
    const keyFor = Symbol.keyFor;
    const toStringTag = Symbol.toStringTag;
    // What may be held weakly: an object, or a symbol not made by `Symbol.for`.
    function holdable(value) {
      return (typeof value === "object" && value !== null) || typeof value === "function" || (typeof value === "symbol" && keyFor(value) === undefined);
    }
    const targets = new WeakMapCtor();
    const tokens = new WeakMapCtor();
    function refTarget(ref) {
      if (!call(weakHas, targets, ref)) throw new TypeErrorCtor("WeakRef.prototype.deref called on an object that is not a WeakRef");
      return call(weakGet, targets, ref);
    }
    function registryTokens(registry, method) {
      const found = call(weakGet, tokens, registry);
      if (found === undefined) throw new TypeErrorCtor(`FinalizationRegistry.prototype.${method} called on an object that is not a FinalizationRegistry`);
      return found;
    }
    const WeakRefShim = class WeakRef {
      constructor(target) {
        if (!holdable(target)) throw new TypeErrorCtor("WeakRef: the target must be an object or a symbol not made by Symbol.for");
        call(weakSet, targets, this, target);
      }
      deref() {
        return refTarget(this);
      }
    };
    const FinalizationRegistryShim = class FinalizationRegistry {
      constructor(cleanupCallback) {
        if (typeof cleanupCallback !== "function") throw new TypeErrorCtor("FinalizationRegistry: the cleanup callback must be a function");
        call(weakSet, tokens, this, new MapCtor());
      }
      register(target, heldValue, unregisterToken) {
        const registered = registryTokens(this, "register");
        if (!holdable(target)) throw new TypeErrorCtor("FinalizationRegistry.prototype.register: the target must be an object or a symbol not made by Symbol.for");
        if (target === heldValue) throw new TypeErrorCtor("FinalizationRegistry.prototype.register: the held value cannot be the target");
        if (unregisterToken !== undefined) {
          if (!holdable(unregisterToken)) throw new TypeErrorCtor("FinalizationRegistry.prototype.register: the unregister token must be an object or a symbol not made by Symbol.for");
          call(mapSet, registered, unregisterToken, true);
        }
        return undefined;
      }
      unregister(unregisterToken) {
        const registered = registryTokens(this, "unregister");
        if (!holdable(unregisterToken)) throw new TypeErrorCtor("FinalizationRegistry.prototype.unregister: the unregister token must be an object or a symbol not made by Symbol.for");
        return call(mapGet, registered, unregisterToken) === true && call(mapDelete, registered, unregisterToken);
      }
    };
    defineProperty(WeakRefShim.prototype, toStringTag, { value: "WeakRef", writable: false, enumerable: false, configurable: true });
    defineProperty(FinalizationRegistryShim.prototype, toStringTag, { value: "FinalizationRegistry", writable: false, enumerable: false, configurable: true });
    defineProperty(g, "WeakRef", { value: WeakRefShim, writable: true, enumerable: false, configurable: true });
    defineProperty(g, "FinalizationRegistry", { value: FinalizationRegistryShim, writable: true, enumerable: false, configurable: true });
  }
  {
    const nativeFrom = Array.from;
    const iterator = Symbol.iterator;
    Array.from = {
      from(items) {
        if (items !== null && items !== undefined && items[iterator] == null) {
          checkLength("Array", "from", Object(items));
        }
        return apply(nativeFrom, this, arguments);
      },
    }.from;
  }
  function checkJson(value) {
    if (isArray(value) && lengthOf(value) > maxLength) throw refusal("JSON", "stringify", lengthOf(value));
  }
  {
    const wrapped = {
      stringify(value, replacer, space) {
        if (isArray(replacer)) return stringify(value, replacer, space);
        const user = typeof replacer === "function" ? replacer : null;
        return stringify(value, function (key, item) {
          const out = user === null ? item : apply(user, this, [key, item]);
          if (typeof out === "object" && out !== null) checkJson(out);
          return out;
        }, space);
      },
    }.stringify;
    JSON.stringify = wrapped;
  }

  function lenient(key, value) {
    switch (typeof value) {
      case "bigint": return `${value}n`;
      case "function": return `[Function ${value.name || "anonymous"}]`;
      case "symbol": return value.toString();
      case "object":
        if (value instanceof U8) return `Uint8Array(${value.length})`;
        if (isArray(value) && lengthOf(value) > maxLength) return `[Array(${lengthOf(value)}), too long to show]`;
        return value;
      default: return value;
    }
  }
  function show(value) {
    switch (typeof value) {
      case "string": return value;
      case "undefined": return "undefined";
      case "bigint": return `${value}n`;
      case "function": return `[Function ${value.name || "anonymous"}]`;
      case "symbol": return value.toString();
      case "object":
        if (value === null) return "null";
        if (value instanceof ErrorCtor) return `${value.name}: ${value.message}`;
        try {
          const text = stringify(value, lenient);
          return text === undefined ? StringCtor(value) : text;
        } catch (e) {
          // Recursion past the stack limit (in a toJSON, say) goes on to end the pass with
          // the stack limit's message; a cycle or a toJSON that throws is shown as such.
          if (e instanceof RangeErrorCtor && StringCtor(e.message).indexOf("call stack") >= 0) throw e;
          if (e instanceof TypeErrorCtor && StringCtor(e.message).indexOf("circular") >= 0) return "[object with a cycle]";
          return `[object that cannot be shown: ${e instanceof ErrorCtor ? `${e.name}: ${e.message}` : typeof e} thrown]`;
        }
      default:
        return StringCtor(value);
    }
  }
  function errorText(e) {
    return e instanceof ErrorCtor ? `${e.name}: ${e.message}` : show(e);
  }
  function install(name, value) {
    defineProperty(g, name, { value: freeze(value), writable: false, enumerable: false, configurable: false });
  }

  // Time and chance that replay (see `codemode::tape`). Every clock reading (`Date.now()`,
  // `new Date()`, `Date()`) is the pass's `link.now()`: what an earlier pass read at this
  // position, else the wall clock, recorded. `Math.random` is the engine's own, seeded per
  // execution; its draws are counted so that a replayed step skips what its closure drew.
  // `new Date(x)`, `Date.parse` and `Date.UTC` are the engine's. Code may replace any of
  // them; its replacement is its own.
  const NativeDate = Date;
  const dateToString = NativeDate.prototype.toString;
  const nativeRandom = Math.random;
  const construct = Reflect.construct;
  let draws = 0;
  {
    const method = (value) => ({ value, writable: true, enumerable: false, configurable: true });
    // Named `Date`, with the engine's length (7), prototype and statics; `instanceof`,
    // subclasses and `constructor` work as with the engine's.
    function Date(year, monthIndex, day, hours, minutes, seconds, ms) {
      if (new.target === undefined) return call(dateToString, new NativeDate(link.now()));
      if (arguments.length === 0) return construct(NativeDate, [link.now()], new.target);
      return construct(NativeDate, arguments, new.target);
    }
    defineProperty(Date, "prototype", { value: NativeDate.prototype, writable: false, enumerable: false, configurable: false });
    defineProperty(NativeDate.prototype, "constructor", method(Date));
    defineProperty(Date, "now", method({ now() { return link.now(); } }.now));
    defineProperty(Date, "parse", method(NativeDate.parse));
    defineProperty(Date, "UTC", method(NativeDate.UTC));
    defineProperty(g, "Date", method(Date));
    defineProperty(Math, "random", method({ random() { draws++; return nativeRandom(); } }.random));
  }
  // Where the pass is in time and chance, for a step's closure that just ended.
  function clockMark() {
    return [link.mark(), draws];
  }
  // Skips to where a replayed step's closure ended the first time (it does not run again).
  function skipTo(mark) {
    link.skip(mark[0]);
    const target = +mark[1];
    while (draws < target) {
      draws++;
      nativeRandom();
    }
  }

  const consoleObject = {};
  for (const level of ["log", "info", "warn", "error", "debug"]) {
    consoleObject[level] = function (...args) {
      let line = "";
      for (let i = 0; i < args.length; i++) line += (i ? " " : "") + show(args[i]);
      link.sink(level, line);
    };
  }
  install("console", consoleObject);

  install(sdkName, {
    search(query) {
      return link.host(sdk.search, values.encodeWire({ query }, "arguments", "codemode.search"));
    },
    describe(target, options) {
      return link.host(sdk.describe, values.encodeWire(options === undefined ? { target } : { target, options }, "arguments", "codemode.describe"));
    },
    async step(name, fn) {
      if (typeof fn !== "function") {
        throw new TypeErrorCtor('codemode.step(name, fn) needs a function, for example: await codemode.step("now", () => Date.now())');
      }
      const reply = await link.host(sdk.step, values.encodeWire({ name }, "arguments", "codemode.step"));
      // A step's value is kept tagged, so the first pass and every replay see the same value.
      if (reply !== null && typeof reply === "object" && reply.replay === true) {
        if (isArray(reply.clock)) skipTo(reply.clock);
        if (typeof reply.error === "string") throw new ErrorCtor(reply.error);
        return values.reviveStep(reply.value);
      }
      const seq = reply !== null && typeof reply === "object" ? reply.seq : null;
      let value;
      try {
        value = await fn();
      } catch (e) {
        await link.host(sdk.step_error, values.encodeWire({ seq, error: errorText(e), clock: clockMark() }, "arguments", "codemode.step"));
        throw e;
      }
      let text;
      try {
        text = values.encodeStep(value, `step(${stringify(name)})`);
      } catch (e) {
        // A value that cannot be kept: its refusal is the step's error, and a replay throws
        // an Error with the same message.
        const message = e instanceof TypeErrorCtor ? StringCtor(e.message) : errorText(e);
        await link.host(sdk.step_error, values.encodeWire({ seq, error: message, clock: clockMark() }, "arguments", "codemode.step"));
        throw e;
      }
      await link.host(sdk.step_result, `{"seq":${stringify(seq)},"value":${text},"clock":${stringify(clockMark())}}`);
      return values.decodeStep(text);
    },
    run(name, input) {
      // The executor adds the chain of snippets this call is made from, from where it is
      // made; nothing the code passes or holds takes part.
      return link.host(sdk.run, values.encodeWire({ name, input: input === undefined ? null : input }, "arguments", "codemode.run"));
    },
  });

  // Drops this file's frames from the stack of an error the code may catch, so what it reads
  // points at its own lines only (an error it cannot change is left as it is).
  const GLUE_FRAME = "sandbox.js";
  const indexOf = String.prototype.indexOf;
  const sliceText = String.prototype.slice;
  function ownFrames(e) {
    try {
      const stack = e !== null && typeof e === "object" ? e.stack : undefined;
      if (typeof stack !== "string" || call(indexOf, stack, GLUE_FRAME) < 0) return e;
      let kept = "";
      for (let start = 0; start < stack.length; ) {
        let end = call(indexOf, stack, "\n", start);
        if (end < 0) end = stack.length;
        const line = call(sliceText, stack, start, end);
        if (call(indexOf, line, GLUE_FRAME) < 0) kept += line + "\n";
        start = end + 1;
      }
      defineProperty(e, "stack", { value: kept, writable: true, enumerable: false, configurable: true });
    } catch (_) {
      // A frozen error or a hostile getter: the error stays as it was.
    }
    return e;
  }
  // The input of `name.method` as JSON text, or the encoding's error with this file's frames
  // dropped.
  function encodeInput(input, name, method) {
    try {
      return encode(input, WIRE, "args", name, method);
    } catch (e) {
      throw ownFrames(e);
    }
  }

  // A positional method: its arguments become the input object here, so the host and the
  // log see the object form; a wrong count names the signature (spelled only then: a
  // fresh context installs every method, and most are never called with a wrong count).
  function positional(name, method, id, params, required) {
    return function (...args) {
      if (args.length < required || args.length > params.length) {
        let signature = "";
        for (let i = 0; i < params.length; i++) signature += (i ? ", " : "") + params[i] + (i < required ? "" : "?");
        const count = required === params.length ? `${required}` : `${required} to ${params.length}`;
        throw ownFrames(new TypeErrorCtor(`${name}.${method}(${signature}) takes ${count} argument(s), got ${args.length}: pass the arguments in that order (those marked ? may be left out)`));
      }
      const input = {};
      for (let i = 0; i < args.length; i++) {
        if (args[i] !== undefined) defineProperty(input, params[i], { value: args[i], writable: true, enumerable: true, configurable: true });
      }
      return link.host(id, encodeInput(input, name, method));
    };
  }
  function plain(name, method, id) {
    return function (args) {
      return link.host(id, encodeInput(args === undefined ? {} : args, name, method));
    };
  }
  // A namespace's own properties are its methods, so a call finds its method at once, as on
  // any object. Its prototype is a Proxy, reached only for a name that is not a method: it
  // throws an error naming the connector, the name and the closest methods (worked out only
  // then). Names of `Object.prototype`, symbols and the names a caller probes any value for
  // (`then` when a namespace is awaited, `toJSON` when it is shown) read as on a plain object;
  // `in` and `Object.keys` see only the methods. A connector that failed to start has no
  // methods, and every name throws why it failed.
  const ProxyCtor = Proxy;
  const reflectGet = Reflect.get;
  const create = Object.create;
  const ObjectProto = Object.prototype;
  const probed = freeze({ __proto__: null, then: true, catch: true, finally: true, toJSON: true, inspect: true, prototype: true, $$typeof: true, nodeType: true, asymmetricMatch: true });
  // What a name compares as: lower case without `_`, `-` or `$` (`createTask` is
  // `create_task`).
  function folded(name) {
    let out = "";
    for (let i = 0; i < name.length; i++) {
      const c = name[i];
      if (c !== "_" && c !== "-" && c !== "$") out += c.toLowerCase();
    }
    return out;
  }
  // Levenshtein distance, stopping at `limit + 1`.
  function distance(a, b, limit) {
    if (Math.abs(a.length - b.length) > limit) return limit + 1;
    let previous = [];
    for (let j = 0; j <= b.length; j++) previous.push(j);
    for (let i = 1; i <= a.length; i++) {
      const row = [i];
      let best = i;
      for (let j = 1; j <= b.length; j++) {
        const cost = a[i - 1] === b[j - 1] ? 0 : 1;
        const d = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost);
        row.push(d);
        if (d < best) best = d;
      }
      if (best > limit) return limit + 1;
      previous = row;
    }
    return previous[b.length];
  }
  // The names closest to `wanted` (at most three, closest first); none when nothing is close.
  function closest(wanted, names) {
    const w = folded(wanted);
    const found = [];
    for (let i = 0; i < names.length; i++) {
      const n = folded(names[i]);
      const limit = Math.max(1, Math.floor(Math.max(w.length, n.length) / 3));
      let d = distance(w, n, limit);
      if (d > limit && w.length >= 4 && n.length >= 4 && (n.indexOf(w) >= 0 || w.indexOf(n) >= 0)) d = limit;
      if (d <= limit) found.push([d, i]);
    }
    found.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
    const out = [];
    for (let i = 0; i < found.length && i < 3; i++) out.push(names[found[i][1]]);
    return out;
  }
  // `a`, `a or b`, `a, b or c`.
  function either(items) {
    return items.length < 2 ? items.join("") : `${items.slice(0, -1).join(", ")} or ${items[items.length - 1]}`;
  }
  const SEARCH_HINT = "codemode.search finds tools by what they do";
  function notAMethod(name, key, methods) {
    const names = [];
    for (let i = 0; i < methods.length; i++) names.push(methods[i][0]);
    // A name past 100 characters is cut in the message (and compared cut).
    const shown = key.length > 100 ? `${key.slice(0, 100)}…` : key;
    const near = closest(shown, names);
    const head = `${name}.${shown} is not a method of connector ${name}`;
    if (near.length > 0) {
      const paths = near.map((m) => `${name}.${m}`);
      return new TypeErrorCtor(`${head}. Did you mean ${either(paths)}? (${SEARCH_HINT}; codemode.describe("${paths[0]}") shows its input)`);
    }
    const listed = names.length > 12 ? `${names.slice(0, 12).join(", ")}, …` : names.join(", ");
    const has = names.length === 0 ? "it has no methods" : `its ${names.length} method${names.length === 1 ? "" : "s"}: ${listed}`;
    return new TypeErrorCtor(`${head} (${has}); ${SEARCH_HINT}, codemode.describe("${name}") lists their inputs`);
  }
  function namespacePrototype(name, methods, failed) {
    return new ProxyCtor(freeze(create(ObjectProto)), {
      // A name that is not a method reads as a function that throws why when called (as the
      // reference, where every name is callable), so `typeof` and feature tests do not throw.
      get(target, key, receiver) {
        if (typeof key === "symbol" || key in target || probed[key] === true) return reflectGet(target, key, receiver);
        if (failed !== undefined) {
          return function unavailable() {
            throw ownFrames(new ErrorCtor(`connector ${name} failed to start: ${failed}`));
          };
        }
        return function missing() {
          throw ownFrames(notAMethod(name, key, methods));
        };
      },
    });
  }

  // `spec` is `[[name, [[method, callId, params?, required?], ...], failed?], ...]`. Each
  // method is an enumerable property, made read-only with its namespace by `install` (one
  // descriptor object serves them all: `defineProperty`, unlike assignment, makes even a
  // method named `__proto__` an own property).
  function declare(spec) {
    const descriptor = { value: undefined, enumerable: true };
    for (let n = 0; n < spec.length; n++) {
      const name = spec[n][0];
      const methods = spec[n][1];
      const ns = create(namespacePrototype(name, methods, spec[n][2]));
      for (let m = 0; m < methods.length; m++) {
        const entry = methods[m];
        descriptor.value = entry.length > 2 ? positional(name, entry[0], entry[1], entry[2], entry[3]) : plain(name, entry[0], entry[1]);
        defineProperty(ns, entry[0], descriptor);
      }
      install(name, ns);
    }
  }
  function bind(hostFn, sinkFn, sdkIds, nowFn, markFn, skipFn) {
    link.host = hostFn;
    link.sink = sinkFn;
    link.now = nowFn;
    link.mark = markFn;
    link.skip = skipFn;
    sdk = sdkIds;
  }

  return { encodeResult: values.encodeResult, reviveWire: values.reviveWire, show, declare, bind, link };
})
