"""Designs: RMIT blocks are permutations reproducible from the seed; ids are stable."""

from collections import Counter

from perflab import campaign as campaign_mod
from perflab.campaign import design

TEXT = """\
campaign: d
benchmark: {tool: iperf3}
hosts: {client: h1, server: h2}
factors: {parallel: [1, 2, 4, 8], reverse: [false, true]}
repetitions: 5
warmups: 2
seed: {seed}
design: {design}
"""


def campaign(seed=1, kind="rmit"):
    return campaign_mod.load("d.yaml", text=TEXT.replace("{seed}", str(seed)).replace("{design}", kind))


def test_rmit_blocks_are_permutations_of_all_cells_warmups_first():
    runs = design.schedule(campaign())
    assert len(runs) == 8 * (5 + 2)
    for block in range(7):
        cells = [r.cell.index for r in runs if r.block == block]
        assert sorted(cells) == list(range(8))
        assert [r.position for r in runs if r.block == block] == list(range(8))
        assert {r.warmup for r in runs if r.block == block} == {block < 2}


def test_rmit_order_is_reproducible_from_the_seed_and_changes_with_it():
    order = lambda s: [r.run_id for r in design.schedule(campaign(s))]  # noqa: E731
    assert order(1) == order(1)
    assert order(1) != order(2)
    blocks = [tuple(r.cell.index for r in design.schedule(campaign()) if r.block == b) for b in range(7)]
    assert len(set(blocks)) > 1, "every block has the same order: not shuffled per block"


def test_run_ids_are_unique_and_readable():
    runs = design.schedule(campaign())
    ids = Counter(r.run_id for r in runs)
    assert max(ids.values()) == 1
    assert runs[0].run_id.startswith(runs[0].cell.slug + "-w000-")


def test_a_measured_run_id_reads_back_as_its_cell_and_a_warmup_as_none():
    runs = design.schedule(campaign())
    assert {design.measured_cell(r.run_id) for r in runs if not r.warmup} == {r.cell.slug for r in runs}
    assert {design.measured_cell(r.run_id) for r in runs if r.warmup} == {None}
    assert design.measured_cell(runs[-1].run_id + "-g3") == runs[-1].cell.slug + "-g3"
    assert design.measured_cell("not-a-run-id") is None


def test_sequential_runs_each_cell_in_a_row():
    runs = design.schedule(campaign(kind="sequential"))
    assert [r.cell.index for r in runs[:7]] == [0] * 7
    assert [r.warmup for r in runs[:7]] == [True, True] + [False] * 5


def test_zip_crossing_pairs_levels():
    cells = campaign_mod.cells({"a": (1, 2), "b": ("x", "y")}, "zip")
    assert [dict(c.levels) for c in cells] == [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]


def test_counts_written_as_whole_floats_schedule_as_integers():
    """The schema's "integer" admits 5.0 and -0.0 (found by the campaign-file fuzzer): they plan as 5 and 0."""
    text = TEXT.replace("repetitions: 5", "repetitions: 5.0").replace("warmups: 2", "warmups: -0.0")
    spec = campaign_mod.load("d.yaml", text=text.replace("{seed}", "3.0").replace("{design}", "rmit"))
    assert (spec.repetitions, spec.warmups, spec.seed) == (5, 0, 3)
    assert len(design.schedule(spec)) == 8 * 5
