"""Pure functions from profiles to pandas tables, one module per tool."""

from .memory import MemoryAnalysis, analyze_memory, default_module, memory_spaces

__all__ = ["MemoryAnalysis", "analyze_memory", "default_module", "memory_spaces"]
