"""The data model and its file formats: probe files, host lists, groups and order files.

Everything downstream (structure, solvers, emitters) reads and writes through here.
"""
