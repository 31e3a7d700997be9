"""CPU frequency scaling (cpufreq policies, the governor, EPP and boost at boot) and idle
states (cpuidle, the C-state limits of the command line, tuned and cpupower)."""
