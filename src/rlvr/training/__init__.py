"""The RL loop and everything around it: the run, batches, the update, checkpoints,
resume.

Also SFT warm-starts (`rlvr sft`) and reward-model training (`rlvr rm-train`);
docs/training.md walks through the modules.
"""
