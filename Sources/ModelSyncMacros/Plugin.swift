import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// Entry point of the compiler plugin; the macros are declared in `ModelSync/Macros.swift`.
@main
struct ModelSyncMacrosPlugin: CompilerPlugin {
    let providingMacros: [Macro.Type] = [
        ModelMacro.self,
        PrimaryKeyMacro.self,
        JSONKeyMacro.self,
        TransformMacro.self,
        IgnoredMacro.self,
        ColumnMacro.self,
    ]
}
