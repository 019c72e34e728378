"""rlvr verifiers for other trainers: TRL `reward_funcs` and verl `compute_score`.

    from rlvr.adapters.trl import reward_func        # GRPOTrainer(reward_funcs=[...])
    from rlvr.adapters.verl import compute_score     # custom_reward_function.path/name

Neither imports TRL or verl: they follow the hosts' calling conventions, and every
check runs in a `VerifierPool` (worker processes, hard time limits).
"""
