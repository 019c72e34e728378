"""Episodes: the policy acting in an environment turn by turn (the contract in base.py)."""
