"""Verifier throughput and accuracy: math, code, IFEval, reward kinds, the grading
service, Ray verifiers."""
