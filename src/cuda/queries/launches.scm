; Host launch sites: `kernel<<<grid, block, smem, stream>>>(args)` and
; `kernel<T><<<…>>>(args)`.
(call_expression
  function: [
    (identifier) @kernel
    (template_function name: (identifier) @kernel arguments: (template_argument_list) @template_args)
    (qualified_identifier) @kernel
  ]
  (kernel_call_syntax) @config
  arguments: (argument_list) @args) @launch
