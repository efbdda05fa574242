"""Snippet mode (`devicelint confirm --snippets`, issue 20): reproductions built from a
finding's code, with the outside data synthesized, run in confirm's sandbox."""
import json
import os
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from devicelint.finding import Finding
from devicelint.runtime.command import confirm
from devicelint.runtime.snippets import FileReproductions, Options, parse_sizes

import torch  # noqa: F401 - reproductions run torch: a broken install must fail, not skip

DATA = Path(__file__).resolve().parent / "data" / "snippets"

PER_ROW_AND_VIEW = textwrap.dedent('''\
    import torch

    B, H, T, D = 2, 4, 5, 8
    device = "cuda"


    def upload(rows):
        out = []
        for row in rows:
            out.append(row.to(device))
        return out


    def merge_heads(y):
        return y.transpose(1, 2).view(B, T, H * D)


    if __name__ == "__main__":
        upload(torch.randn(16, 3))
        merge_heads(torch.randn(B, H, T, D))
    ''')


def _line(source, text):
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def _finding(path, code, line, name="rule"):
    return Finding(code, name, str(path), line, 1, line, 1, "message")


def _build(tmp_path, source, code, line, **options):
    path = tmp_path / "snippet_case.py"
    path.write_text(source)
    repros = FileReproductions(str(path), source, Options(**options))
    return repros.build(_finding(path, code, line))


def test_a_parameter_becomes_a_tensor_of_the_known_rank_with_literal_sizes(tmp_path):
    repro = _build(tmp_path, PER_ROW_AND_VIEW, "DL003", 15)
    assert repro.reason is None
    assert [(s.name, s.what) for s in repro.synthesized] == [
        ("y", "tensor (2, 4, 5, 8) on cpu, float32")]
    lines = repro.script.splitlines()
    assert lines[repro.line - 1].strip().startswith("return y.transpose(1, 2).view(B, T, H * D)")
    assert "merge_heads(y=torch.randn(2, 4, 5, 8, device='cpu'))" in repro.script
    # the slice: what the line uses, not the rest of the file
    assert "def upload" not in repro.script and "B, H, T, D = 2, 4, 5, 8" in repro.script


def test_sizes_the_user_sets_replace_defaults(tmp_path):
    source = PER_ROW_AND_VIEW.replace("merge_heads(torch.randn(B, H, T, D))",
                                      "merge_heads(torch.randn(*shape))")
    source = source.replace("B, H, T, D = 2, 4, 5, 8\n", "")
    source = source.replace("view(B, T, H * D)", "view(y.shape[0], -1)")
    line = _line(source, ".view(")
    plain = _build(tmp_path, source, "DL003", line)
    assert plain.reason is not None and "unknown" in plain.reason  # no rank, no guess
    shaped = _build(tmp_path, source, "DL003", line, sizes={"y": (3, 4, 6, 8)})
    assert shaped.reason is None
    assert shaped.synthesized[0].what.startswith("tensor (3, 4, 6, 8)")


def test_parse_sizes():
    assert parse_sizes(["B=32", "x=64,128", "default=8"]) == {
        "B": 32, "x": (64, 128), "default": 8}
    for bad in ("B", "B=0", "B=x", "=3"):
        with pytest.raises(ValueError):
            parse_sizes([bad])


def test_data_read_from_a_file_is_synthesized_or_the_finding_says_why(tmp_path):
    source = textwrap.dedent('''\
        import numpy as np
        import torch

        table = torch.from_numpy(np.load("/no/such/file.npy")).reshape(-1, 20)
        raw = np.load("/no/such/other.npy")
        for row in table:
            row.to("cuda")
        for row in raw:
            torch.from_numpy(row).to("cuda")
        ''')
    rows = _build(tmp_path, source, "DL001", 7)
    assert rows.reason is None, rows.reason
    assert "table = torch.randn(4, 20, device='cpu')  # synthesized:" in rows.script
    assert "import numpy" not in rows.script  # nothing reads the file any more
    assert rows.synthesized[0].what == "tensor (4, 20) on cpu, float32"
    unknown = _build(tmp_path, source, "DL001", 9)
    assert unknown.script is None
    assert unknown.reason.startswith("cannot synthesize raw (read by `np.load(")


def _confirm_snippets(tmp_path, *extra):
    out = tmp_path / "out.json"
    result = CliRunner().invoke(confirm, [
        "--snippets", str(tmp_path / "snippet_case.py"), "--device", "sim", "--format", "json",
        "-o", str(out), *extra])
    assert result.exit_code in (0, 1), result.output
    return {(f["code"], f["line"]): f["confirmation"]
            for f in json.loads(out.read_text())["findings"]}


def test_snippet_mode_confirms_a_per_row_copy_and_a_transposed_view_on_sim(tmp_path):
    # The file's own __main__ is never run: a crash there does not matter.
    source = PER_ROW_AND_VIEW + "    raise SystemExit('the program itself never runs')\n"
    (tmp_path / "snippet_case.py").write_text(source)
    saved = tmp_path / "repros"
    found = _confirm_snippets(tmp_path, "--save-repro", str(saved))
    assert found[("DL001", 10)]["status"] == "confirmed", found[("DL001", 10)]
    assert found[("DL003", 15)]["status"] == "confirmed", found[("DL003", 15)]
    assert "view size is not compatible" in found[("DL003", 15)]["error"]
    assert found[("DL003", 15)]["snippet"]["synthesized"] == [
        {"name": "y", "value": "tensor (2, 4, 5, 8) on cpu, float32"}]
    scripts = sorted(p.name for p in saved.iterdir())
    assert scripts == ["snippet_case_L10_DL001.py", "snippet_case_L15_DL003.py"]
    assert found[("DL003", 15)]["snippet"]["reproduction"].endswith("snippet_case_L15_DL003.py")


PRACTITIONER = DATA / "train_sensor_model.py"


def test_a_training_script_without_its_dataset_is_confirmed_from_snippets(tmp_path):
    """Issue 20: the script needs a dataset this machine does not have (running it stops at
    np.load); snippet mode confirms its per-row transfer, its transposed view and its
    unmoved module without running it."""
    assert "/mnt/lab-share/sensor-activity/v3" in PRACTITIONER.read_text()
    assert not os.path.exists("/mnt/lab-share/sensor-activity/v3")
    out, saved = tmp_path / "out.json", tmp_path / "repros"
    result = CliRunner().invoke(confirm, [
        "--snippets", str(PRACTITIONER), "--device", "sim", "--format", "json", "-o", str(out),
        "--save-repro", str(saved)])
    assert result.exit_code == 1, result.output  # 1: something was confirmed
    found = {(f["code"], f["line"]): f["confirmation"]
             for f in json.loads(out.read_text())["findings"]}
    text = PRACTITIONER.read_text().splitlines()
    per_row = _line("\n".join(text), "window.to(device) for window in test_x")
    view = _line("\n".join(text), ".transpose(1, 2).view(")
    unmoved = _line("\n".join(text), "pred = model(")
    assert found[("DL001", per_row)]["status"] == "confirmed", found[("DL001", per_row)]
    assert found[("DL003", view)]["status"] == "confirmed", found[("DL003", view)]
    assert found[("DL002", unmoved)]["status"] == "confirmed", found[("DL002", unmoved)]
    assert "same device" in found[("DL002", unmoved)]["error"]
    # what was synthesized is said: the test split, from the shapes the code gives it
    assert {"name": "test_x", "value": "tensor (4, 6, 16) on cpu, float32"} in \
        found[("DL003", view)]["snippet"]["synthesized"]
    for script in saved.iterdir():  # no reproduction reads the missing files
        code = [line.split("#")[0] for line in script.read_text().splitlines()]
        assert not any("np.load(" in line or "load_split(" in line for line in code), script
    # a saved reproduction is a plain script: python alone shows the pitfall
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(saved / f"train_sensor_model_L{view}_DL003.py")],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 1 and "view size is not compatible" in done.stderr, done.stderr


def test_sizes_from_the_config_table_and_the_command_line(tmp_path, monkeypatch):
    from devicelint.config import ConfigError, load_settings
    from devicelint.runtime.command import _configured_sizes

    (tmp_path / "pyproject.toml").write_text(
        "[tool.devicelint.confirm.sizes]\nB = 32\nx = [64, 128]\n")
    (tmp_path / "train.py").write_text("import torch\n")
    monkeypatch.chdir(tmp_path)
    assert _configured_sizes(["train.py"]) == {"B": 32, "x": (64, 128)}
    for bad in ("B = 0", 'B = "big"', "B = [2, -1]"):
        (tmp_path / "pyproject.toml").write_text(f"[tool.devicelint.confirm.sizes]\n{bad}\n")
        with pytest.raises(ConfigError):
            load_settings(None, tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.devicelint.confirm]\nsize = 3\n")
    with pytest.raises(ConfigError):
        load_settings(None, tmp_path)
    # a bad --size is a usage error (exit 2) before any run
    (tmp_path / "pyproject.toml").write_text("[tool.devicelint.confirm.sizes]\nB = 32\n")
    result = CliRunner().invoke(confirm, ["--snippets", "train.py", "--size", "B=x"])
    assert result.exit_code == 2 and "--size" in result.output
    result = CliRunner().invoke(confirm, ["train.py", "--size", "B=3"])
    assert result.exit_code == 2 and "go with --snippets" in result.output


WHOLE_SIM = Path(__file__).resolve().parent / "data" / "snippet-whole-sim.json"


@pytest.mark.slow
def test_snippets_agree_with_whole_file_runs_on_sim(tmp_path, monkeypatch):
    """Issue 20: on fixtures/, snippet mode alone gives the whole-file run's status for at
    least 80% of the findings that run decided. The whole-file verdicts are recorded
    (bench/snippet_agreement.py --record; keyed by file, code and line text); this runs the
    snippets (minutes of CPU)."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent.parent / "bench"))
    import snippet_agreement

    record = json.loads(WHOLE_SIM.read_text())
    root = Path(__file__).resolve().parent.parent
    whole = {(v["path"], v["code"], v["text"]): {"line": 0, "confirmation": {
        "status": v["status"]}} for v in record["verdicts"]}
    out = tmp_path / "snippets.json"
    monkeypatch.chdir(root)
    result = CliRunner().invoke(confirm, ["--snippets", "fixtures", "--device", "sim",
                                          "--format", "json", "-o", str(out)])
    assert result.exit_code in (0, 1), result.output
    snippets = snippet_agreement.verdicts(json.loads(out.read_text()))
    decided, agree, disagree = snippet_agreement.compare(whole, snippets)
    assert decided >= 0.9 * len(record["verdicts"])  # the record still matches the fixtures
    assert len(agree) / decided >= 0.80, [
        (d["key"][:2], d["snippet"].get("summary")) for d in disagree]


def test_a_slice_keeps_defaults_cuda_state_and_the_files_other_flagged_lines(tmp_path):
    source = textwrap.dedent('''\
        import os
        import torch

        model = torch.nn.Linear(4, 16).to("cuda")


        def decode(steps=3):
            tokens = [1.0, 2.0, 3.0, 4.0]
            print("decoding")
            for _ in range(steps):
                x = torch.tensor(tokens[-4:]).to("cuda")
                tokens.append(float(model(x).argmax()))
            return tokens


        def pick_gpu():
            count = torch.cuda.device_count()
            unrelated = 3
            os.environ["CUDA_VISIBLE_DEVICES"] = "1"
        ''')
    path = tmp_path / "snippet_case.py"
    path.write_text(source)
    repros = FileReproductions(str(path), source, Options())
    upload, read_back = _line(source, "x = torch.tensor"), _line(source, "tokens.append")
    repros.flagged = [(upload, upload, "DL016"), (read_back, read_back, "DL004")]
    decode = repros.build(_finding(path, "DL016", upload))
    assert decode.reason is None and decode.synthesized == []  # `steps` keeps its default
    assert "decode()" in decode.script and 'print("decoding")' not in decode.script
    lines = decode.script.splitlines()
    assert [(lines[line - 1].strip(), code) for line, _, code in decode.watched] == [
        ("tokens.append(float(model(x).argmax()))  # <- devicelint: also flagged", "DL004")]
    env = repros.build(_finding(path, "DL013", _line(source, "CUDA_VISIBLE_DEVICES")))
    assert "torch.cuda.device_count()" in env.script  # the driver state the line runs in
    assert "unrelated" not in env.script


def test_gradients_read_keep_the_backward_that_writes_them(tmp_path):
    source = textwrap.dedent('''\
        import torch

        model = torch.nn.Linear(8, 2).to("cuda")
        for step in range(3):
            loss = model(torch.randn(4, 8, device="cuda")).sum()
            print("step", step)
            loss.backward()
            norm = float(model.weight.grad.norm())
        ''')
    repro = _build(tmp_path, source, "DL004", _line(source, "norm = float"))
    assert "loss.backward()" in repro.script and 'print("step"' not in repro.script


def test_a_constructor_that_ran_cleanly_does_not_refute_a_finding():
    from devicelint.runtime.repro import confirmation
    from devicelint.runtime.snippets import Reproduction

    repro = Reproduction(_finding("m.py", "DL002", 3), script="x = 1\n", line=1,
                         entry="Tower.__init__(...)")
    seen = confirmation(repro, {"status": "refuted", "summary": "the line ran"}, None, "sim", None)
    assert seen["status"] == "inconclusive" and "only builds the object" in seen["summary"]
    plain = Reproduction(_finding("m.py", "DL002", 3), script="x = 1\n", line=1, entry="f(...)")
    assert confirmation(plain, {"status": "refuted", "summary": "ran"}, None, "sim",
                        None)["status"] == "refuted"


def test_a_timestamp_keeps_the_work_it_measures(tmp_path):
    source = textwrap.dedent('''\
        import time
        import torch


        def bench(steps=3):
            a = torch.randn(256, 256, device="cuda")
            start = time.perf_counter()
            for _ in range(steps):
                b = a @ a
            end = time.perf_counter()
            return end - start
        ''')
    repro = _build(tmp_path, source, "DL012", _line(source, "end = time.perf_counter()"))
    assert "b = a @ a" in repro.script and "start = time.perf_counter()" in repro.script


def test_the_example_reproductions_are_what_snippet_mode_builds(monkeypatch):
    """tests/data/snippets/examples/: three saved reproductions of the practitioner script
    (docs/runtime.md names them); they stay what the builder writes."""
    from devicelint.rule import all_rules
    from devicelint.runner import lint_file
    from devicelint.runtime.repro import script_name
    from devicelint.runtime.snippets import build_all

    root = Path(__file__).resolve().parent.parent
    relative = "tests/data/snippets/train_sensor_model.py"
    monkeypatch.chdir(root)
    findings = lint_file(relative, relative, list(all_rules()), 10**7)
    built = {script_name(r): r.script for r in build_all(findings, Options())}
    examples = sorted((DATA / "examples").iterdir())
    assert [p.name for p in examples] == [
        "train_sensor_model_L60_DL001.py", "train_sensor_model_L63_DL002.py",
        "train_sensor_model_L67_DL003.py"]
    for example in examples:
        assert built[example.name] == example.read_text(), example.name


def test_the_users_own_modules_are_imported_only_when_asked(tmp_path):
    (tmp_path / "mymodels.py").write_text("import torch\nNet = torch.nn.Linear\n")
    source = textwrap.dedent('''\
        import torch
        from mymodels import Net

        model = Net(8, 2)
        x = torch.randn(4, 8).to("cuda")
        y = model(x)
        ''')
    line = _line(source, "y = model(x)")
    refused = _build(tmp_path, source, "DL002", line)
    assert refused.script is None
    assert "imported from the user's module mymodels" in refused.reason
    assert "--import-user-code" in refused.reason
    allowed = _build(tmp_path, source, "DL002", line, import_user_code=True)
    assert allowed.reason is None
    assert f"sys.path.insert(0, {str(tmp_path)!r})" in allowed.script
    assert "from mymodels import Net" in allowed.script
