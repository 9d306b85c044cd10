// `same(a, b, wire)`: whether `a` (what came back) is `b` (made afresh), kind for kind; over a
// connector (`wire`), a Date is its ISO text, -0 is 0 and an undefined property is absent.
function same(a, b, wire) {
  if (typeof b === "number") return wire ? a === b : Object.is(a, b);
  if (b === null || typeof b !== "object") return a === b;
  if (b instanceof Date) {
    if (wire) return a === b.toISOString();
    return a instanceof Date && Object.is(a.getTime(), b.getTime());
  }
  if (b instanceof Map) {
    if (!(a instanceof Map) || a.size !== b.size) return false;
    const x = [...a], y = [...b];
    return x.every((e, i) => same(e[0], y[i][0], wire) && same(e[1], y[i][1], wire));
  }
  if (b instanceof Set) {
    if (!(a instanceof Set) || a.size !== b.size) return false;
    const x = [...a], y = [...b];
    return x.every((e, i) => same(e, y[i], wire));
  }
  if (ArrayBuffer.isView(b)) {
    if (!ArrayBuffer.isView(a) || a.constructor !== b.constructor || a.length !== b.length) return false;
    for (let i = 0; i < b.length; i++) if (!Object.is(a[i], b[i])) return false;
    return true;
  }
  if (b instanceof Error) return a instanceof Error && a.name === b.name && a.message === b.message;
  if (b instanceof RegExp) return a instanceof RegExp && a.source === b.source && a.flags === b.flags;
  if (Array.isArray(b)) {
    if (!Array.isArray(a) || a.length !== b.length) return false;
    for (let i = 0; i < b.length; i++) {
      if ((i in a) !== (i in b) || !same(a[i], b[i], wire)) return false;
    }
    return true;
  }
  if (Array.isArray(a) || a === null || typeof a !== "object") return false;
  const kept = (o) => Object.keys(o).filter((k) => !(wire && o[k] === undefined)).sort();
  const ka = kept(a), kb = kept(b);
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && same(a[k], b[k], wire));
}
