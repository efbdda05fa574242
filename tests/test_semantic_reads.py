"""Model facts behind library near-misses: what a piece of a split is laid out like, and
what an item read back from a container the code writes items into may be."""
from devicelint.semantic.values import Kind, Place

from tests.test_semantic import value_at


def test_pieces_along_dim_0_of_a_contiguous_tensor_are_contiguous():
    source = """
    import torch
    flat = torch.cat([torch.randn(6), torch.randn(4)]).float()
    rows = torch.randn(8, 6)
    pieces = flat.split([6, 4])
    first = pieces[0]  # rows
    last = flat.split([6, 4], -1)[0]  # last of 1-D
    top = rows.chunk(2, dim=0)[0]  # top
    left = rows.split(3, dim=1)[0]  # columns
    pieces_of_t = rows.t().split(2)[0]  # transposed
    """
    assert value_at(source, "rows").layout.contiguous
    assert value_at(source, "last of 1-D").layout.contiguous
    assert value_at(source, "top").layout.contiguous
    assert value_at(source, "columns").layout.state == "narrowed"
    assert not value_at(source, "transposed").layout.contiguous


def test_an_item_read_after_a_store_that_may_write_it_has_no_known_place():
    source = """
    import torch
    from torch.utils.data import DataLoader
    device = torch.device("cuda")
    def every_item():
        for batch, _ in DataLoader([]):
            for k in list(batch):
                batch[k] = batch[k].to(device)
            patches = batch["patches"]  # any key
    def one_item():
        for batch, _ in DataLoader([]):
            batch["mask"] = batch["mask"].to(device)
            patches = batch["patches"]  # another key
            mask = batch["mask"]  # same key
    def on_the_host():
        for batch, _ in DataLoader([]):
            batch["x"] = batch["x"].float()
            x = batch["x"]  # kept on the host
    """
    moved = value_at(source, "any key")
    assert moved.place is Place.UNKNOWN
    other = value_at(source, "another key")
    assert other.kind is Kind.TENSOR and other.place is Place.CPU
    assert value_at(source, "same key").place is Place.UNKNOWN
    assert value_at(source, "kept on the host").place is Place.CPU
