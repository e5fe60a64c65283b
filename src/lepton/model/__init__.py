"""Pure data and pure functions: the calling-context tree, metric specs and flat records.

Nothing in this package has side effects or imports another Lepton package.
"""
