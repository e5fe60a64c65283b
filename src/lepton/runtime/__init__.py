"""The engine under the public API: what runs on every scope, state change and launch
(`hot_path`), one session's data (`session`), the sessions of the process and their backends
(`registry`), and the python context's stack walks (`python_stacks`)."""
