; Names a chunk declares for itself: parameters, locals, loop variables, template
; parameters, struct fields and enumerators. Isolation subtracts them from the
; identifiers a chunk uses, so that only free names are looked up in the scope.
; Declarators nest (`*a`, `a[N]`, `a = 1`); Rust code descends to the identifier.
(parameter_declaration declarator: (_) @local)
(optional_parameter_declaration declarator: (_) @local)
(variadic_parameter_declaration declarator: (_) @local)
(declaration declarator: (_) @local)
(for_range_loop declarator: (_) @local)
(type_parameter_declaration (type_identifier) @local)
(optional_type_parameter_declaration name: (type_identifier) @local)
(variadic_type_parameter_declaration (type_identifier) @local)
(labeled_statement label: (statement_identifier) @local)
(catch_clause parameters: (parameter_list (parameter_declaration declarator: (_) @local)))
(lambda_capture_specifier (identifier) @local)
(field_declaration declarator: (_) @field)
(enumerator name: (identifier) @enumerator)
; Members of a class or struct body: methods (defined or declared) and nested types.
(field_declaration_list (function_definition declarator: (_) @field))
(field_declaration_list (template_declaration (function_definition declarator: (_) @field)))
(field_declaration_list (declaration declarator: (_) @field))
(field_declaration_list (template_declaration (declaration declarator: (_) @field)))
(field_declaration_list (field_declaration type: [(struct_specifier) (class_specifier) (union_specifier) (enum_specifier)] @field))
(field_declaration_list (template_declaration [(struct_specifier) (class_specifier) (union_specifier)] @field))
(field_declaration_list (type_definition declarator: (_) @field))
(field_declaration_list (alias_declaration name: (_) @field))
