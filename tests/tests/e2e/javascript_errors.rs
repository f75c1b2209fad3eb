//! Hostile JavaScript, each script contained with the host tree unchanged
//! (prototype pollution of `tools`, `eval` of fetched code, a 512 MiB
//! string, deep recursion, a busy loop, a promise storm), and a script's
//! errors and exit codes as node gives them: never a trap.

use crate::javascript::js;
use sbx_wasm_tests::{LoopbackServer, snapshot};
use std::path::Path;

#[test]
fn hostile_scripts_are_each_contained_and_the_host_tree_is_unchanged() {
    let server = LoopbackServer::start();
    let t = js(
        "max_fuel = 2000000000\nmax_wall_ms = 10000\nmax_memory_bytes = 134217728",
        &format!("[net]\nallow = [\"{}\"]\n", server.origin()),
    );
    let before = snapshot(t.dir.path());
    // (script, exit code, hard violation or "", text its output must hold)
    let cases: &[(&str, &str, i32, &str, &str)] = &[
        (
            "pollute.js",
            "Object.prototype.call = () => 'polluted';\n\
             Object.defineProperty(Object.prototype, 'then', { value: 1, configurable: true });\n\
             try { tools.word_count = () => 'mine'; } catch (e) { console.log('set:', e.name); }\n\
             try { Object.setPrototypeOf(tools, {}); } catch (e) { console.log('proto:', e.name); }\n\
             try { await tools.word_count('a b'); } catch (e) { console.log('call:', e.violation); }",
            0,
            "",
            "set: TypeError\nproto: TypeError\ncall: tool_denied\n",
        ),
        (
            "eval.js",
            // Code fetched from the granted server is evaluated: it runs in
            // the sandbox, under the same grant.
            &format!(
                "const code = await (await fetch('{}/status')).text();\n\
                 const f = new Function('fs', 'try {{ fs.readFileSync(\"/etc/passwd\") }} catch (e) {{ return e.violation }}');\n\
                 console.log(eval('1 + 1'), code.length > 0, f(require('fs')));",
                server.origin()
            ),
            0,
            "",
            "2 true fs_read_denied\n",
        ),
        (
            "big.js",
            // A 512 MiB string is a rope until it is written out whole.
            "const s = 'x'.repeat(2 ** 29); console.log(s.length); new TextEncoder().encode(s);",
            124,
            "max_memory",
            "536870912\n",
        ),
        (
            "deep.js",
            "function f(n) { return f(n + 1) + 1; }\nf(0);",
            1,
            "",
            "",
        ),
        ("busy.js", "for (;;) {}", 124, "max_fuel", ""),
        (
            "storm.js",
            "function storm() { Promise.resolve().then(storm); Promise.resolve().then(storm); }\nstorm();",
            124,
            "max_fuel",
            "",
        ),
    ];
    for (name, source, code, violation, out) in cases {
        t.write(name, source);
        let ran = t.run(name, &[]);
        assert_eq!(
            ran.code(),
            Some(*code),
            "{name}: {}\n{}",
            ran.stdout(),
            ran.stderr()
        );
        assert_eq!(ran.violation(), *violation, "{name}: {}", ran.report);
        assert!(ran.stdout().contains(out), "{name}: {}", ran.stdout());
    }
    // Deep recursion is the script's own error, with node's frame count.
    let deep = t.run("deep.js", &[]);
    assert!(
        deep.stderr()
            .contains("Uncaught InternalError: too much recursion"),
        "{}",
        deep.stderr()
    );
    assert_eq!(deep.stderr().matches("    at f (deep.js:1:").count(), 10);
    let mut after = snapshot(t.dir.path());
    after.retain(|p, _| !p.starts_with("report.json"));
    let mut before = before;
    before.retain(|p, _| {
        !["report.json"].contains(&p.to_str().unwrap())
            && !cases.iter().any(|c| p == Path::new(c.0))
    });
    after.retain(|p, _| !cases.iter().any(|c| p == Path::new(c.0)));
    assert_eq!(after, before, "the host tree changed");
}

#[test]
fn errors_and_exit_codes_are_as_node_gives_them() {
    let t = js("", "");
    let cases: &[(&str, &str, i32, &str, &str)] = &[
        (
            "throws.js",
            "console.log('before');\nfunction inner() { throw new TypeError('bad input'); }\ninner();",
            1,
            "before\n",
            "Uncaught TypeError: bad input\n    at inner (throws.js:2:26)\n    at throws.js:3:1",
        ),
        (
            "syntax.ts",
            "const x: number = ;",
            1,
            "",
            "Uncaught SyntaxError: Error transforming syntax.ts: Unexpected token (1:19)",
        ),
        (
            "exit0.mjs",
            "console.log('a'); process.exit(0); console.log('b');",
            0,
            "a\n",
            "",
        ),
        (
            "exit3.js",
            "console.log('a'); process.exit(3); console.log('b');",
            3,
            "a\n",
            "",
        ),
        (
            "denied.js",
            "require('fs').readFileSync('/etc/shadow');",
            1,
            "",
            "Uncaught SbxDenied: fs_read_denied: /etc/shadow is outside every mount",
        ),
        (
            "unsettled.mjs",
            "await new Promise(() => {});\nconsole.log('never');",
            // node's code for it.
            13,
            "",
            "Warning: Detected unsettled top-level await in unsettled.mjs",
        ),
        (
            "timer_throws.js",
            "setTimeout(() => { throw new RangeError('late'); }, 1);\nsetInterval(() => {}, 1000);\nconsole.log('set');",
            1,
            "set\n",
            "Uncaught RangeError: late\n    at timer_throws.js:1:",
        ),
        (
            "timer_exits.js",
            "setTimeout(() => process.exit(0), 1);\nsetInterval(() => {}, 1000);",
            0,
            "",
            "",
        ),
        (
            "buffer.js",
            "const b = require('fs').readFileSync('/work/table.csv');\n\
             console.log(b.subarray(0, 4), b.toString().split('\\n')[1], Buffer.from('aGk=', 'base64').toString('hex'));",
            0,
            "<Buffer 6e 61 6d 65> ada,3 6869\n",
            "",
        ),
        (
            "npm.js",
            "import _ from 'lodash';",
            1,
            "",
            "Cannot find module 'lodash': the sbx JavaScript runner has sbx, buffer, fs",
        ),
        (
            "timers.ts",
            "let n = 0; const id = setInterval(() => { if (++n === 3) { clearInterval(id); console.log('ticks', n);\n\
             setTimeout(() => console.log('later'), 2); } }, 1);\nconsole.log('first');",
            0,
            "first\nticks 3\nlater\n",
            "",
        ),
        (
            "inspect.js",
            "console.log({ a: 1, b: 'x', c: [1, 2, { d: null }] }, new Map([['k', 1]]), [undefined, -0], 'raw');\n\
             console.log('%s has %d items', 'list', 3, { extra: true });",
            0,
            "{ a: 1, b: 'x', c: [ 1, 2, { d: null } ] } Map(1) { 'k' => 1 } [ undefined, -0 ] raw\n\
             list has 3 items { extra: true }\n",
            "",
        ),
    ];
    for (name, source, code, stdout, stderr) in cases {
        t.write(name, source);
        let ran = t.run(name, &["x"]);
        assert_eq!(ran.code(), Some(*code), "{name}: {}", ran.stderr());
        assert_eq!(ran.stdout(), *stdout, "{name}: {}", ran.stderr());
        assert!(ran.stderr().contains(stderr), "{name}: {}", ran.stderr());
        // Never a trap: a script's failure is its own.
        assert!(
            !ran.stderr().contains("guest trapped"),
            "{name}: {}",
            ran.stderr()
        );
    }
    // The script's name and arguments, as node gives them.
    t.write("argv.js", "console.log(process.argv.slice(1).join(' '));");
    assert_eq!(t.run("argv.js", &["a", "b c"]).stdout(), "/argv.js a b c\n");
}
