"""bench/practitioner.py: label parsing and the matching of findings to judged cases."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def load():
    spec = importlib.util.spec_from_file_location("practitioner_bench", ROOT / "bench" / "practitioner.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


P = load()
HEADER = "repo\tpath\tline\tcode\tverdict\treason\n"


def labels(tmp_path: Path, rows: list[str]):
    file = tmp_path / "labels.tsv"
    file.write_text(HEADER + "".join(r + "\n" for r in rows), encoding="utf-8")
    return P.read_labels(file)


def test_read_labels_ranges_open_codes_and_cells(tmp_path):
    got = labels(tmp_path, [
        "nanoGPT\ttrain.py\t225\tDL004\tTP\tloss.item() per eval step.",
        "# a comment",
        "PyTorch-GAN\ta.py\t241-246\tDL004\tTP\tone print, six reads.",
        "PyTorch-GAN\tb.py\t138\tDL007|DL018\tMISS\t[host-noise] np.random per step.",
        "pytorch-seq2seq\tn.ipynb\tc94:23\tDL004\tTP\tin a notebook cell.",
    ])
    assert [l.line for l in got] == ["225", "241-246", "138", "c94:23"]
    assert got[2].codes == ("DL007", "DL018") and got[2].rule == "DL007"
    assert P.line_span("241-246") == ("", 241, 246)
    assert P.line_span("c94:23") == ("c94:", 23, 23)
    assert P.line_span("x") is None


def test_read_labels_rejects_unknown_repo_verdict_and_duplicates(tmp_path):
    with pytest.raises(SystemExit):
        labels(tmp_path, ["nanoGPT\ttrain.py\t1\tDL004\tMAYBE\tno."])
    with pytest.raises(SystemExit):
        labels(tmp_path, ["no-such-repo\ttrain.py\t1\tDL004\tTP\tno."])
    with pytest.raises(SystemExit):
        labels(tmp_path, ["nanoGPT\ttrain.py\t1\tDL004\tTP\ta.", "nanoGPT\ttrain.py\t1\tDL004\tFP\tb."])


def test_tally_counts_one_case_per_label(tmp_path):
    judged = labels(tmp_path, [
        "nanoGPT\ttrain.py\t10\tDL004\tTP\tfound.",
        "nanoGPT\ttrain.py\t20-24\tDL004\tTP\tone statement, two findings in it.",
        "nanoGPT\ttrain.py\t30\tDL004\tMISS\tcaught now.",
        "nanoGPT\ttrain.py\t40\tDL004\tMISS\tstill missed.",
        "nanoGPT\ttrain.py\t50\tDL004\tTP\tgone: lost.",
        "nanoGPT\ttrain.py\t60\tDL010\tFP\tfound: a false positive.",
        "nanoGPT\ttrain.py\t70\tDL010\tFP\tgone: silenced.",
        "nanoGPT\ttrain.py\t80\tDL007|DL018\tMISS\tcaught under DL018.",
        "nanoGPT\ttrain.py\t90\tDL007|DL018\tMISS\tstill missed.",
    ])
    found = [
        ("nanoGPT", "train.py", "10", "DL004"),
        ("nanoGPT", "train.py", "21", "DL004"),
        ("nanoGPT", "train.py", "23", "DL004"),
        ("nanoGPT", "train.py", "30", "DL004"),
        ("nanoGPT", "train.py", "60", "DL010"),
        ("nanoGPT", "train.py", "80", "DL018"),
        ("nanoGPT", "train.py", "99", "DL004"),   # nobody judged it
        ("nanoGPT", "train.py", "40", "DL008"),   # right line, other rule: not the DL004 case
    ]
    t = P.tally(found, judged)
    assert t.rows["DL004"]["TP"] == 3            # 10, the 20-24 statement once, 30
    assert t.rows["DL004"]["caught"] == 1
    assert t.rows["DL004"]["missed"] == 2 and t.rows["DL004"]["lost"] == 1
    assert t.rows["DL004"]["unjudged"] == 1
    assert t.rows["DL010"]["FP"] == 1 and t.rows["DL010"]["silenced"] == 1
    assert t.rows["DL018"]["TP"] == 1 and t.rows["DL018"]["caught"] == 1
    assert t.rows["DL007|DL018"]["missed"] == 1
    assert t.rows["DL008"]["unjudged"] == 1
    assert sorted(t.unjudged) == [("nanoGPT", "train.py", "40", "DL008"), ("nanoGPT", "train.py", "99", "DL004")]
    assert [l.line for l in t.missed] == ["40", "50", "90"]
    assert t.per_repo["nanoGPT"]["TP"] == 4 and t.per_repo["nanoGPT"]["FP"] == 1


def test_finding_key_uses_cell_positions_for_notebooks():
    repo = P.BY_NAME["pytorch-seq2seq"]
    finding = {"path": "./n.ipynb", "line": 400, "code": "DL004", "cell": 94, "cell_line": 23}
    assert P.finding_key(repo, finding) == ("pytorch-seq2seq", "n.ipynb", "c94:23", "DL004")
    plain = {"path": "a/b.py", "line": 7, "code": "DL004"}
    assert P.finding_key(repo, plain) == ("pytorch-seq2seq", "a/b.py", "7", "DL004")


def test_repo_selection_patterns():
    gan = P.BY_NAME["PyTorch-GAN"]
    assert gan.selects("implementations/gan/gan.py")
    assert not gan.selects("README.md") and not gan.selects("assets/x.py")
    vae = P.BY_NAME["PyTorch-VAE"]
    assert vae.selects("models/vq_vae.py") and not vae.selects("tests/test_vae.py")
    assert not vae.selects("x/.ipynb_checkpoints/a.ipynb")
    assert len({r.name for r in P.REPOS}) == len(P.REPOS) >= 10
    assert all(len(r.commit) == 40 for r in P.REPOS)


def test_held_out_repos_are_scored_apart():
    held = {r.name for r in P.REPOS if r.held_out}
    assert held and held < set(P.BY_NAME)
    tuned = {r.name for r in P.chosen_repos(None, held_out=False, scoring=True)}
    assert tuned and not tuned & held and tuned | held == set(P.BY_NAME)
    assert {r.name for r in P.chosen_repos(None, held_out=True, scoring=True)} == held
    assert {r.name for r in P.chosen_repos(None, held_out=False, scoring=False)} == set(P.BY_NAME)
    assert {r.name for r in P.chosen_repos(None, held_out=True, scoring=False)} == held
    some = sorted(held)[0]
    assert [r.name for r in P.chosen_repos([some], held_out=False, scoring=True)] == [some]


def test_mirror_of_finds_a_bare_snapshot_or_a_clone_s_git_directory(tmp_path):
    repo = P.Repo("x", "owner/name", "0" * 40, ("*",))
    bare = tmp_path / "owner+name" / "repo"
    bare.mkdir(parents=True)
    assert P.mirror_of(repo, tmp_path) == bare
    (bare / ".git").mkdir()
    assert P.mirror_of(repo, tmp_path) == bare / ".git"
