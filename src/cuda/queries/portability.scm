; Constructs nvcc accepts but NVRTC (C++ only, no host compiler) rejects: each is named
; in the unit's diagnostics so a failed compile check is explained.
(compound_literal_expression) @compound_literal
