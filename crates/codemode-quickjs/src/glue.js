// Installs the sandbox's globals. Called when a fresh context is made (before any pass):
// `console` and the SDK are installed then, and `declare` installs the connector namespaces
// (then, when the connectors are known ahead, or by the pass). `bind`, called once by the
// pass before the model's code, binds the host and the console sink.
// The helpers it returns stay in this closure and are not reachable from the model's code.
(function (b64encode, b64decode, sdkName) {
  "use strict";
  let host = null;
  let sink = null;
  let sdk = null;
  const g = globalThis;
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const defineProperty = Object.defineProperty;
  const freeze = Object.freeze;
  const keys = Object.keys;
  const isArray = Array.isArray;
  const U8 = Uint8Array;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const StringCtor = String;
  const BigIntCtor = BigInt;
  const JSON_ONLY = "only JSON values (plus BigInt and Uint8Array) can be passed to the host or returned";

  function at(key) {
    return key === "" ? "" : ` (at key "${key}")`;
  }
  function replacer(key, value) {
    switch (typeof value) {
      case "bigint":
        return { $bigint: StringCtor(value) };
      case "function":
        throw new TypeErrorCtor(`a function${at(key)} cannot leave the sandbox: ${JSON_ONLY}`);
      case "symbol":
        throw new TypeErrorCtor(`a symbol${at(key)} cannot leave the sandbox: ${JSON_ONLY}`);
      case "object":
        return value instanceof U8 ? { $bytes: b64encode(value) } : value;
      default:
        return value;
    }
  }
  function encode(value) {
    let text;
    try {
      text = stringify(value, replacer);
    } catch (e) {
      if (e instanceof TypeErrorCtor && StringCtor(e.message).indexOf("circular") >= 0) {
        throw new TypeErrorCtor(`a value that contains itself (a cycle) cannot leave the sandbox: ${JSON_ONLY}`);
      }
      throw e;
    }
    return text === undefined ? "null" : text;
  }
  function revive(value) {
    if (value === null || typeof value !== "object") return value;
    if (isArray(value)) {
      for (let i = 0; i < value.length; i++) value[i] = revive(value[i]);
      return value;
    }
    const names = keys(value);
    if (names.length === 1) {
      const only = value[names[0]];
      if (names[0] === "$bigint" && typeof only === "string") {
        try { return BigIntCtor(only); } catch (_) { return value; }
      }
      if (names[0] === "$bytes" && typeof only === "string") {
        const bytes = b64decode(only);
        if (bytes !== null) return bytes;
      }
    }
    for (const name of names) {
      const before = value[name];
      const after = revive(before);
      if (after !== before) defineProperty(value, name, { value: after, writable: true, enumerable: true, configurable: true });
    }
    return value;
  }
  function decode(text) {
    return revive(parse(text));
  }
  function lenient(key, value) {
    switch (typeof value) {
      case "bigint": return `${value}n`;
      case "function": return `[Function ${value.name || "anonymous"}]`;
      case "symbol": return value.toString();
      case "object": return value instanceof U8 ? `Uint8Array(${value.length})` : value;
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
        } catch (_) {
          return "[object with a cycle]";
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

  const consoleObject = {};
  for (const level of ["log", "info", "warn", "error", "debug"]) {
    consoleObject[level] = function (...args) {
      let line = "";
      for (let i = 0; i < args.length; i++) line += (i ? " " : "") + show(args[i]);
      sink(level, line);
    };
  }
  install("console", consoleObject);

  install(sdkName, {
    search(query) {
      return host(sdk.search, encode({ query }));
    },
    describe(target) {
      return host(sdk.describe, encode({ target }));
    },
    async step(name, fn) {
      if (typeof fn !== "function") {
        throw new TypeErrorCtor('codemode.step(name, fn) needs a function, for example: await codemode.step("now", () => Date.now())');
      }
      const reply = await host(sdk.step, encode({ name }));
      if (reply !== null && typeof reply === "object" && reply.replay === true) return reply.value;
      const seq = reply !== null && typeof reply === "object" ? reply.seq : null;
      let text;
      try {
        text = encode(await fn());
      } catch (e) {
        await host(sdk.step_error, encode({ seq, error: errorText(e) }));
        throw e;
      }
      await host(sdk.step_result, `{"seq":${encode(seq)},"value":${text}}`);
      return decode(text);
    },
    run(name, input) {
      return host(sdk.run, encode({ name, input: input === undefined ? null : input }));
    },
  });

  function declare(spec) {
    for (const [name, methods] of spec) {
      const ns = {};
      for (const [method, id] of methods) {
        defineProperty(ns, method, {
          value: function (args) {
            return host(id, encode(args === undefined ? {} : args));
          },
          enumerable: true,
        });
      }
      install(name, ns);
    }
  }
  function bind(hostFn, sinkFn, sdkIds) {
    host = hostFn;
    sink = sinkFn;
    sdk = sdkIds;
  }

  return { encode, revive, show, declare, bind };
})
