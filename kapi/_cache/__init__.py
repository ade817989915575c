"""The disk cache of compiled kernels: store (entries, keys, the cache directory, bundles) and
identity (what a kernel's key is made of: its code, globals and closure, by value).

Used by kernel compilation (kapi._kernel); knows devices only by their identity strings.
"""
