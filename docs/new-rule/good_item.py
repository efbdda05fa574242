import torch

counts = {"a": 1, "b": 2}
for name, count in counts.items():
    print(name, count, torch.__version__)
