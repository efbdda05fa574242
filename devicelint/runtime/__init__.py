"""The runtime checker behind `devicelint confirm`.

Only `devicelint confirm` imports this package, and only the child process (child.py and the
modules it loads: sim, tracker, probes, costs, ddp) imports torch. The parent side (command,
launch, plan, report) stays torch-free so that plain linting never pays for torch.
"""
