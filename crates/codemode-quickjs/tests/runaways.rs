//! Every runaway ends at the deadline: loops in the model's code, catastrophic regular
//! expressions, and built-ins that loop in C over a huge `length` (which never poll the
//! interrupt, so the sandbox refuses those lengths up front with a RangeError).

mod common;

use std::time::{Duration, Instant};

use codemode::PassEnd;
use codemode_quickjs::{QuickJsExecutor, QuickJsOptions};
use common::{returned, run_with, TestHost};
use serde_json::json;

/// The deadline of every pass here.
const DEADLINE: Duration = Duration::from_millis(300);
/// Fixed slack on top of the deadline plus 10%: thread hand-offs on a busy 2-core machine.
const SLACK: Duration = Duration::from_millis(100);

fn executor() -> QuickJsExecutor {
    QuickJsExecutor::new(QuickJsOptions::default().with_wall_time(DEADLINE))
}

/// Runs `body` in a pass and returns how it ended and how long it took.
async fn timed(executor: &QuickJsExecutor, body: &str) -> (String, Duration) {
    let started = Instant::now();
    let result = run_with(
        executor,
        &format!("async () => {{ {body} }}"),
        TestHost::echo(),
    )
    .await;
    let elapsed = started.elapsed();
    let end = match result.end {
        PassEnd::Failed(message) => message,
        other => format!("{other:?}"),
    };
    (end, elapsed)
}

const SPARSE_LENGTHS: [&str; 2] = ["2**53 - 1", "2**32 - 1"];

/// Built-ins that loop over the receiver's length, called on `{length: L}` and, where `L`
/// can be an array's length, on a sparse array.
const ON_ARRAY_LIKES: [&str; 20] = [
    "Array.prototype.reverse.call(o)",
    "Array.prototype.copyWithin.call(o, 0, 1)",
    "Array.prototype.flat.call(o)",
    "Array.prototype.flatMap.call(o, x => x)",
    "Array.prototype.splice.call(o, 0, 1)",
    "Array.prototype.shift.call(o)",
    "Array.prototype.unshift.call(o, 1)",
    "Array.prototype.slice.call(o, 0)",
    "Array.prototype.fill.call(o, 0)",
    "Array.prototype.join.call(o, '')",
    "Array.prototype.join.call(o)",
    "Array.prototype.toLocaleString.call(o)",
    "Array.prototype.sort.call(o)",
    "Array.prototype.toSorted.call(o)",
    "Array.prototype.toReversed.call(o)",
    "Array.prototype.toSpliced.call(o, 0, 1)",
    "Array.prototype.with.call(o, 0, 1)",
    "Array.prototype.concat.call([], Object.assign(o, {[Symbol.isConcatSpreadable]: true}))",
    "Array.from(o)",
    "String(Object.setPrototypeOf(o, Array.prototype))",
];

/// Built-ins that poll the interrupt themselves: they run until the deadline.
const POLLING: [&str; 7] = [
    "Array.prototype.indexOf.call(o, 1)",
    "Array.prototype.lastIndexOf.call(o, 1)",
    "Array.prototype.includes.call(o, 1)",
    "Array.prototype.forEach.call(o, x => x)",
    "Array.prototype.reduce.call(o, (a, x) => x, 0)",
    "Array.prototype.findLast.call(o, x => false)",
    "for (const k of Array.prototype.keys.call(o)) {}",
];

fn assert_refused(end: &str, elapsed: Duration, case: &str) {
    assert!(
        end.contains("RangeError: ") && end.contains("was refused"),
        "{case}: {end}"
    );
    assert!(elapsed < DEADLINE, "{case}: refused after {elapsed:?}");
}

fn assert_at_deadline(end: &str, elapsed: Duration, case: &str) {
    assert!(end.starts_with("Time limit"), "{case}: {end}");
    let most = DEADLINE + DEADLINE / 10 + SLACK;
    assert!(
        elapsed >= DEADLINE && elapsed <= most,
        "{case}: ended after {elapsed:?}"
    );
}

#[tokio::test]
async fn built_ins_over_a_huge_length_are_refused_at_once() {
    let executor = executor();
    for length in SPARSE_LENGTHS {
        for call in ON_ARRAY_LIKES {
            let case = format!("const o = {{length: {length}}}; return {call};");
            let (end, elapsed) = timed(&executor, &case).await;
            assert_refused(&end, elapsed, &case);
        }
    }
    let sparse = [
        "const a = new Array(2**32 - 1); return a.reverse();",
        "const a = []; a[2**32 - 2] = 1; return a.sort();",
        "const a = new Array(2**32 - 1); return a.join('');",
        "const a = new Array(2**32 - 1); return a.splice(0, 1);",
        "const a = new Array(2**32 - 1); return a.flat();",
        "const a = new Array(2**32 - 1); return `${a}`;",
        "const a = new Array(2**32 - 1); return JSON.stringify({ a });",
        "const a = new Array(2**32 - 1); return a;",
        "return [1].flatMap(() => new Array(2**32 - 1));",
        "return [[1], [[new Array(2**32 - 1)]]].flat(Infinity);",
        "return Array.prototype.reverse.call(new Proxy({length: 2**53 - 1}, {}));",
        "return Reflect.apply(Array.prototype.copyWithin, {length: 2**53 - 1}, [0, 1]);",
    ];
    for case in sparse {
        let (end, elapsed) = timed(&executor, case).await;
        assert_refused(&end, elapsed, case);
    }
    let code = "async () => { console.log({ a: new Array(2**32 - 1) }); return 1; }";
    let result = run_with(&executor, code, TestHost::echo()).await;
    assert_eq!(
        result.logs,
        vec![r#"{"a":"[Array(4294967295), too long to show]"}"#]
    );
}

#[tokio::test]
async fn loops_regexes_and_polling_built_ins_end_at_the_deadline() {
    let executor = executor();
    let mut cases: Vec<String> = vec![
        "while (true) {}".into(),
        "for (;;) { try { while (true) {} } catch (e) {} }".into(),
        "return /(a+)+$/.test('a'.repeat(40) + 'b');".into(),
        "return 'a'.repeat(40).replace(/(a|aa)+b/, 'x');".into(),
        "while (true) { try { [].reverse.call({length: 2**53 - 1}); } catch (e) {} }".into(),
        "const a = Array.from({length: 2**20}, (_, i) => -i); while (true) a.sort();".into(),
        "const a = Array.from({length: 2**18}, (_, i) => -i); while (true) a.toSorted();".into(),
        "const a = new Uint8Array(2**24); while (true) a.join('-');".into(),
        "const a = new Float64Array(2**22); while (true) String(a);".into(),
    ];
    for length in SPARSE_LENGTHS {
        for call in POLLING {
            cases.push(format!("const o = {{length: {length}}}; {call};"));
        }
    }
    for case in &cases {
        let (end, elapsed) = timed(&executor, case).await;
        assert_at_deadline(&end, elapsed, case);
    }
}

#[tokio::test]
async fn typed_arrays_and_strings_of_absurd_sizes_stop_at_once() {
    let executor = executor();
    let cases = [
        "return new Uint8Array(2**31).length;",
        "return new Uint8Array(2**32 - 1).length;",
        "return new Float64Array(2**27).fill(1).length;",
        "return Uint8Array.from({length: 2**53 - 1}).length;",
        "return new Uint8Array({length: 2**32 - 1}).length;",
        "return 'x'.repeat(2**32 - 1).length;",
        "return 'x'.repeat(2**29).length;",
        "return 'x'.padStart(2**29).length;",
        "return 'x'.padEnd(2**53 - 1, 'ab').length;",
        "return new Array(2**24).join('abcdefgh').length;",
    ];
    for case in cases {
        let (end, elapsed) = timed(&executor, case).await;
        let stopped = end.starts_with("Memory limit") || end.starts_with("RangeError");
        assert!(stopped, "{case}: {end}");
        assert!(elapsed < DEADLINE, "{case}: ended after {elapsed:?}");
    }
}

#[tokio::test]
async fn guarded_built_ins_behave_as_the_originals_at_ordinary_lengths() {
    let code = r#"async () => {
        const like = () => ({ length: 5, 0: 'a', 2: 'c', 4: 'e' });
        const keys = (o) => Object.keys(o).map(k => [k, o[k]]);
        const holes = [1, , 3, undefined, , 'b', 10, 9, 'a', 2];
        return {
            reverse: keys(Array.prototype.reverse.call(like())),
            copyWithin: keys(Array.prototype.copyWithin.call(like(), 0, 2)),
            fill: keys(Array.prototype.fill.call({ length: 3 }, 7, 1)),
            splice: [Array.prototype.splice.call(like(), 1, 2, 'x'), keys((() => { const o = like(); Array.prototype.splice.call(o, 1, 2, 'x'); return o; })())],
            shift: (() => { const o = like(); const first = Array.prototype.shift.call(o); return [first, keys(o)]; })(),
            unshift: (() => { const o = like(); const n = Array.prototype.unshift.call(o, 'z'); return [n, keys(o)]; })(),
            slice: Array.prototype.slice.call(like(), 1, 4),
            join: [Array.prototype.join.call(like()), Array.prototype.join.call(like(), '-'), holes.join(), String(holes)],
            sort: [holes.slice().sort(), 1 in holes.slice().sort(), holes.slice().sort().length, [3, 1, 2].sort(undefined), [3, 1, 2].sort((a, b) => b - a), [{}, 'a', 5n, -1].sort().map(String), holes.toSorted()],
            sortRefusesNonFunctions: (() => { try { [2, 1].sort(1); return 'sorted'; } catch (e) { return e.constructor.name; } })(),
            stable: [[1, 'b'], [0, 'a'], [1, 'a'], [0, 'b']].sort((x, y) => x[0] - y[0]).map(p => p.join('')),
            flat: [[1, [2, [3, [4]]], , 5].flat(), [[1, [2, [3, [4]]]]].flat(Infinity), [1, [2]].flat(0)],
            flatMap: [[1, 2].flatMap(x => [x, [x * 10]]), Array.prototype.flatMap.call({ length: 2, 0: 1, 1: 2 }, function (x) { return [x, this.k]; }, { k: 'k' })],
            concat: [[1].concat([2], { length: 1, 0: 3, [Symbol.isConcatSpreadable]: true }, 4, [[5]]), Array.prototype.concat.call({ a: 1 }, 2).length],
            from: [Array.from({ length: 3, 1: 'b' }), Array.from('ab'), Array.from({ length: 2 }, (_, i) => i * 2), Array.from(new Set([1, 2]))],
            copies: [like.length, [1, 2, 3].toReversed(), [1, 2, 3].toSpliced(1, 1), [1, 2, 3].with(-1, 9), Array.prototype.toReversed.call(like())],
            locale: [1234.5, 'x'].toLocaleString(),
            json: [JSON.stringify({ a: [1, 2], b: undefined, d: new Date(0) }), JSON.stringify([1, { b: 2 }], null, 1), JSON.stringify({ a: 1, b: 2 }, ['b']), JSON.stringify({ a: 1, b: 'x' }, (k, v) => typeof v === 'number' ? v * 2 : v), JSON.stringify(undefined) === undefined],
            names: ['reverse', 'sort', 'flatMap', 'concat', 'join', 'splice'].map(n => [Array.prototype[n].name, Array.prototype[n].length]),
            lengths: ['reverse', 'copyWithin', 'fill', 'splice', 'shift', 'unshift', 'slice', 'join', 'toLocaleString', 'toReversed', 'toSpliced', 'with', 'sort', 'toSorted', 'flat', 'flatMap', 'concat'].map(n => Array.prototype[n].name === n ? Array.prototype[n].length : n),
            typedJoin: (({ name, length }) => [name, length])(Object.getPrototypeOf(Uint8Array.prototype).join),
            argumentCount: [(() => { const a = [1, 2, 3]; a.splice(1); return a; })(), (() => { const a = [1, 2, 3]; a.splice(1, undefined); return a; })(), [1, 2, 3].toSpliced(1), [1, 2, 3].slice(undefined, 2)],
            allDescriptors: ['fill', 'flat', 'concat', 'with'].map(n => (({ writable, enumerable, configurable }) => [writable, enumerable, configurable])(Object.getOwnPropertyDescriptor(Array.prototype, n))),
            fromName: [Array.from.name, Array.from.length, JSON.stringify.name, JSON.stringify.length],
            notConstructors: (() => { try { new Array.prototype.reverse(); return 'constructed'; } catch (e) { return e.constructor.name; } })(),
            descriptor: (({ writable, enumerable, configurable }) => [writable, enumerable, configurable])(Object.getOwnPropertyDescriptor(Array.prototype, 'reverse')),
            nullThis: (() => { try { Array.prototype.reverse.call(null); return 'ran'; } catch (e) { return e.constructor.name; } })(),
        };
    }"#;
    let value = returned(&run_with(&executor(), code, TestHost::echo()).await);
    let expected = json!({
        "reverse": [["0", "e"], ["2", "c"], ["4", "a"], ["length", 5]],
        "copyWithin": [["0", "c"], ["2", "e"], ["4", "e"], ["length", 5]],
        "fill": [["1", 7], ["2", 7], ["length", 3]],
        "splice": [[null, "c"], [["0", "a"], ["1", "x"], ["3", "e"], ["length", 4]]],
        "shift": ["a", [["1", "c"], ["3", "e"], ["length", 4]]],
        "unshift": [6, [["0", "z"], ["1", "a"], ["3", "c"], ["5", "e"], ["length", 6]]],
        "slice": [null, "c", null],
        "join": ["a,,c,,e", "a--c--e", "1,,3,,,b,10,9,a,2", "1,,3,,,b,10,9,a,2"],
        "sort": [[1, 10, 2, 3, 9, "a", "b", null, null, null], true, 10, [1, 2, 3], [3, 2, 1], ["-1", "5", "[object Object]", "a"], [1, 10, 2, 3, 9, "a", "b", null, null, null]],
        "sortRefusesNonFunctions": "TypeError",
        "stable": ["0a", "0b", "1b", "1a"],
        "flat": [[1, 2, [3, [4]], 5], [1, 2, 3, 4], [1, [2]]],
        "flatMap": [[1, [10], 2, [20]], [1, "k", 2, "k"]],
        "concat": [[1, 2, 3, 4, [5]], 2],
        "from": [[null, "b", null], ["a", "b"], [0, 2], [1, 2]],
        "copies": [0, [3, 2, 1], [1, 3], [1, 2, 9], ["e", null, "c", null, "a"]],
        "locale": "1234.5,x",
        "json": ["{\"a\":[1,2],\"d\":\"1970-01-01T00:00:00.000Z\"}", "[\n 1,\n {\n  \"b\": 2\n }\n]", "{\"b\":2}", "{\"a\":2,\"b\":\"x\"}", true],
        "names": [["reverse", 0], ["sort", 1], ["flatMap", 1], ["concat", 1], ["join", 1], ["splice", 2]],
        "lengths": [0, 2, 1, 2, 0, 1, 2, 1, 0, 0, 2, 2, 1, 1, 0, 1, 1],
        "typedJoin": ["join", 1],
        "argumentCount": [[1], [1, 2, 3], [1], [1, 2]],
        "allDescriptors": [[true, false, true], [true, false, true], [true, false, true], [true, false, true]],
        "fromName": ["from", 1, "stringify", 3],
        "notConstructors": "TypeError",
        "descriptor": [true, false, true],
        "nullThis": "TypeError",
    });
    assert_eq!(value, expected);
}

#[tokio::test]
async fn a_long_default_sort_keeps_the_default_order_holes_and_undefined() {
    // Past 65,536 elements the default order is a JavaScript comparator (so it polls).
    let code = r#"async () => {
        const b = Array.from({ length: 70000 }, (_, i) => i % 3 === 0 ? undefined : 70000 - i);
        delete b[1];
        const sorted = b.sort();
        const values = b.slice(0, 46665);
        return [
            sorted === b, b.length, typeof b[46664], b[46665] === undefined, b[69998] === undefined,
            69998 in b, 69999 in b,
            values.every((v, i, a) => typeof v === 'number' && (i === 0 || String(a[i - 1]) <= String(v))),
            b[0],
        ];
    }"#;
    let roomy =
        QuickJsExecutor::new(QuickJsOptions::default().with_wall_time(Duration::from_secs(20)));
    let value = returned(&run_with(&roomy, code, TestHost::echo()).await);
    assert_eq!(
        value,
        json!([true, 70000, "number", true, true, true, false, true, 10001])
    );
}

#[tokio::test]
async fn a_huge_dense_looking_length_within_the_memory_limit_still_runs() {
    let code = "async () => { const a = Array.from({ length: 200000 }, (_, i) => i); a.reverse(); a.sort(); return [a[0], a[1], a.join('').length, a.slice(5, 7), a.flat().length]; }";
    let roomy =
        QuickJsExecutor::new(QuickJsOptions::default().with_wall_time(Duration::from_secs(20)));
    let value = returned(&run_with(&roomy, code, TestHost::echo()).await);
    assert_eq!(value, json!([0, 1, 1088890, [10000, 100000], 200000]));
}
