"""when_imported: setup that waits for the program to import a module
(torch._dynamo: seconds) runs right after that import, in the order asked,
or at once when the module is loaded; a failing callback is one warning and
the program's import still succeeds."""
import subprocess
import sys
import textwrap


def run(tmp_path, body):
    (tmp_path / "late_mod.py").write_text("VALUE = 42\n")
    code = textwrap.dedent("""
        import sys
        sys.path.insert(0, %r)
        from dftracer.python.import_hooks import when_imported
        calls = []
    """ % str(tmp_path)) + textwrap.dedent(body)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_callbacks_run_after_the_import_in_the_order_asked_and_once(tmp_path):
    proc = run(tmp_path, """
        def a(): calls.append(("a", sys.modules["late_mod"].VALUE))
        def b(): calls.append(("b", sys.modules["late_mod"].VALUE))
        when_imported("late_mod", a)
        when_imported("late_mod", b)
        when_imported("late_mod", a)  # asked twice: run once
        assert calls == [] and "late_mod" not in sys.modules
        import late_mod
        import late_mod
        when_imported("late_mod", b)  # loaded: at once
        print(calls)
    """)
    assert proc.stdout.strip() == "[('a', 42), ('b', 42), ('b', 42)]"


def test_a_failing_callback_is_one_warning_and_the_import_succeeds(tmp_path):
    proc = run(tmp_path, """
        def bad(): raise RuntimeError("no such hook")
        def good(): calls.append("good")
        when_imported("late_mod", bad)
        when_imported("late_mod", good)
        import late_mod
        when_imported("late_mod", bad)  # loaded: at once, and still only a warning
        print(late_mod.VALUE, calls)
    """)
    assert proc.stdout.strip() == "42 ['good']"
    assert proc.stderr.count("tracing setup after importing late_mod failed: no such hook") == 2, proc.stderr
