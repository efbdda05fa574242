"""`devicelint confirm` on fixtures: which refutations fail the run's exit code."""
from devicelint.finding import Finding
from devicelint.runtime.command import _exit_code

CLEAN, FOUND = 0, 1


def _refuted(path: str, line: int, code: str = "DL004") -> Finding:
    return Finding(code, "sync-in-loop", path, line, 1, line, 2, "m",
                   confirmation={"status": "refuted", "summary": "read nothing back"})


def test_a_refuted_bad_line_fails_a_fixture_run(tmp_path) -> None:
    fixture = tmp_path / "bad_reads.py"
    fixture.write_text("x = 1\ny = x.item()  # expect: DL004\n")
    assert _exit_code([_refuted(str(fixture), 2)], [], fixture_mode=True) == FOUND


def test_a_refuted_line_marked_as_a_runtime_gap_does_not(tmp_path) -> None:
    fixture = tmp_path / "bad_reads.py"
    fixture.write_text("x = 1\ny[0] = x  # expect: DL004  # runtime-gap: DL004 not observable\n")
    assert _exit_code([_refuted(str(fixture), 2)], [], fixture_mode=True) == CLEAN
    # The marker names one rule: another rule's refutation on that line still fails.
    assert _exit_code([_refuted(str(fixture), 2, "DL016")], [], fixture_mode=True) == FOUND
