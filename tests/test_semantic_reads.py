"""Model facts behind library near-misses: what a piece of a split is laid out like, and
what an item read back from a container the code writes items into may be."""
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

