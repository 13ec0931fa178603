; Function definitions at the top of a chunk, with or without a template header.
; Captures the function, its declarator chain (Rust descends to the name) and the
; template parameter list.
(translation_unit
  (function_definition declarator: (_) @declarator body: (compound_statement) @body) @function)
(translation_unit
  (template_declaration
    parameters: (template_parameter_list) @template_params
    (function_definition declarator: (_) @declarator body: (compound_statement) @body) @function))
