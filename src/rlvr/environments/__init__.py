"""Environments the policy acts in: built-ins and the ecosystem's."""
