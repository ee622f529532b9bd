import SwiftDiagnostics

/// Every message `@Model` can emit. The `id` is stable, so tests and tools can match it.
enum ModelDiagnostic: DiagnosticMessage {
    case notAStruct
    case genericType
    case attributeOnComputedProperty(attribute: String)
    case attributeOnStaticProperty(attribute: String)
    case ignoredOnComputedProperty
    case ignoredOnStaticProperty
    case ignoredNeedsDefault(property: String)
    case decodeExcludedNeedsDefault(property: String)
    case lazyProperty
    case propertyWrapper
    case unsupportedPattern
    case propertyInIfConfig
    case unsupportedType(type: String, property: String)
    case implicitlyUnwrappedOptional(type: String, property: String, replacement: String)
    case letWithInitialValue(property: String)
    case jsonKeyNotLiteral
    case emptyJSONKey
    case duplicateJSONKey(key: String)
    case excludedListNotLiteral(argument: String)
    case unknownExcludedName(name: String, model: String)
    case ignoredExcludedName(name: String, argument: String)
    case hookShouldBeStatic(hook: String)
    case hookShouldNotBeStatic(hook: String)
    case tableNameNotLiteral
    case emptyTableName
    case columnNameNotLiteral
    case emptyColumnName
    case duplicateColumnName(column: String)
    case boolArgumentNotLiteral(argument: String)
    case nameGroupsNotLiteral(argument: String)
    case unknownColumnProperty(name: String, argument: String, model: String)
    case withoutRowIDNeedsPrimaryKey
    case autoincrementNeedsSingleKey
    case autoincrementWithoutRowID
    case autoincrementNeedsInteger(type: String, property: String)
    case sqlOptionWithoutSQLModel(argument: String, model: String)
    case untypedPrimaryKey(property: String)

    var message: String {
        switch self {
        case .notAStruct:
            "@Model can only be applied to a struct"
        case .genericType:
            "@Model does not support generic types"
        case .attributeOnComputedProperty(let attribute):
            "@\(attribute) cannot be applied to a computed property"
        case .attributeOnStaticProperty(let attribute):
            "@\(attribute) cannot be applied to a static property"
        case .ignoredOnComputedProperty:
            "computed properties are never stored; @Ignored is redundant"
        case .ignoredOnStaticProperty:
            "static properties are never stored; @Ignored is redundant"
        case .ignoredNeedsDefault(let property):
            "@Ignored property '\(property)' needs a default value"
        case .decodeExcludedNeedsDefault(let property):
            "property '\(property)' is excluded from decoding and needs a default value"
        case .lazyProperty:
            "lazy properties are not supported by @Model; mark it @Ignored"
        case .propertyWrapper:
            "property wrappers are not supported by @Model"
        case .unsupportedPattern:
            "@Model needs one name per binding; declare each property separately"
        case .propertyInIfConfig:
            "stored properties inside '#if' are not supported by @Model"
        case .unsupportedType(let type, let property):
            "type '\(type)' of '\(property)' cannot be stored by @Model"
        case .implicitlyUnwrappedOptional(let type, let property, let replacement):
            "type '\(type)' of '\(property)' cannot be stored by @Model; use '\(replacement)'"
        case .letWithInitialValue(let property):
            "'let' property '\(property)' with an initial value cannot be decoded; make it 'var' or mark it @Ignored"
        case .jsonKeyNotLiteral:
            "@JSON needs a string literal without interpolation"
        case .emptyJSONKey:
            "@JSON key must not be empty"
        case .duplicateJSONKey(let key):
            "duplicate JSON key '\(key)'"
        case .excludedListNotLiteral(let argument):
            "'\(argument)' needs an array literal of string literals"
        case .unknownExcludedName(let name, let model):
            "'\(name)' is not a stored property of \(model)"
        case .ignoredExcludedName(let name, let argument):
            "'\(name)' is @Ignored and never coded; listing it in '\(argument)' has no effect"
        case .hookShouldBeStatic(let hook):
            "'\(hook)' is called as a JSON hook only when it is 'static'"
        case .hookShouldNotBeStatic(let hook):
            "'\(hook)' is called as a JSON hook only when it is an instance method"
        case .tableNameNotLiteral:
            "'table' needs a string literal without interpolation"
        case .emptyTableName:
            "table name must not be empty"
        case .columnNameNotLiteral:
            "@Column needs a string literal without interpolation"
        case .emptyColumnName:
            "@Column name must not be empty"
        case .duplicateColumnName(let column):
            "duplicate column name '\(column)'"
        case .boolArgumentNotLiteral(let argument):
            "'\(argument)' needs 'true' or 'false'"
        case .nameGroupsNotLiteral(let argument):
            "'\(argument)' needs an array literal of arrays of string literals"
        case .unknownColumnProperty(let name, let argument, let model):
            "'\(name)' in '\(argument)' is not a stored property of \(model)"
        case .withoutRowIDNeedsPrimaryKey:
            "a 'withoutRowID' table needs a primary key; mark one with @PrimaryKey"
        case .autoincrementNeedsSingleKey:
            "'autoincrement' needs a primary key of one column"
        case .autoincrementWithoutRowID:
            "'autoincrement' is not available in a 'withoutRowID' table"
        case .autoincrementNeedsInteger(let type, let property):
            "'autoincrement' needs an integer primary key; '\(property)' is '\(type)'"
        case .sqlOptionWithoutSQLModel(let argument, let model):
            "'\(argument)' has an effect only when '\(model)' declares 'SQLModel' ('struct \(model): SQLModel')"
        case .untypedPrimaryKey(let property):
            "write the type of the primary key '\(property)' ('var \(property): Int') so that ids are typed by it; without it the model is not 'KeyedModel'"
        }
    }

    var severity: DiagnosticSeverity {
        switch self {
        case .ignoredOnComputedProperty, .ignoredOnStaticProperty, .ignoredExcludedName,
            .hookShouldBeStatic, .hookShouldNotBeStatic, .sqlOptionWithoutSQLModel, .untypedPrimaryKey:
            .warning
        default:
            .error
        }
    }

    var diagnosticID: MessageID {
        let id: String =
            switch self {
            case .notAStruct: "notAStruct"
            case .genericType: "genericType"
            case .attributeOnComputedProperty: "attributeOnComputedProperty"
            case .attributeOnStaticProperty: "attributeOnStaticProperty"
            case .ignoredOnComputedProperty: "ignoredOnComputedProperty"
            case .ignoredOnStaticProperty: "ignoredOnStaticProperty"
            case .ignoredNeedsDefault: "ignoredNeedsDefault"
            case .decodeExcludedNeedsDefault: "decodeExcludedNeedsDefault"
            case .lazyProperty: "lazyProperty"
            case .propertyWrapper: "propertyWrapper"
            case .unsupportedPattern: "unsupportedPattern"
            case .propertyInIfConfig: "propertyInIfConfig"
            case .unsupportedType: "unsupportedType"
            case .implicitlyUnwrappedOptional: "implicitlyUnwrappedOptional"
            case .letWithInitialValue: "letWithInitialValue"
            case .jsonKeyNotLiteral: "jsonKeyNotLiteral"
            case .emptyJSONKey: "emptyJSONKey"
            case .duplicateJSONKey: "duplicateJSONKey"
            case .excludedListNotLiteral: "excludedListNotLiteral"
            case .unknownExcludedName: "unknownExcludedName"
            case .ignoredExcludedName: "ignoredExcludedName"
            case .hookShouldBeStatic: "hookShouldBeStatic"
            case .hookShouldNotBeStatic: "hookShouldNotBeStatic"
            case .tableNameNotLiteral: "tableNameNotLiteral"
            case .emptyTableName: "emptyTableName"
            case .columnNameNotLiteral: "columnNameNotLiteral"
            case .emptyColumnName: "emptyColumnName"
            case .duplicateColumnName: "duplicateColumnName"
            case .boolArgumentNotLiteral: "boolArgumentNotLiteral"
            case .nameGroupsNotLiteral: "nameGroupsNotLiteral"
            case .unknownColumnProperty: "unknownColumnProperty"
            case .withoutRowIDNeedsPrimaryKey: "withoutRowIDNeedsPrimaryKey"
            case .autoincrementNeedsSingleKey: "autoincrementNeedsSingleKey"
            case .autoincrementWithoutRowID: "autoincrementWithoutRowID"
            case .autoincrementNeedsInteger: "autoincrementNeedsInteger"
            case .sqlOptionWithoutSQLModel: "sqlOptionWithoutSQLModel"
            case .untypedPrimaryKey: "untypedPrimaryKey"
            }
        return MessageID(domain: "ModelSyncMacros", id: id)
    }
}

/// Notes attached to a diagnostic.
enum ModelNote: NoteMessage {
    case jsonKeyFirstUsed(property: String)
    case columnFirstUsed(property: String)

    var message: String {
        switch self {
        case .jsonKeyFirstUsed(let property), .columnFirstUsed(let property): "first used by '\(property)' here"
        }
    }

    var noteID: MessageID {
        switch self {
        case .jsonKeyFirstUsed: MessageID(domain: "ModelSyncMacros", id: "jsonKeyFirstUsed")
        case .columnFirstUsed: MessageID(domain: "ModelSyncMacros", id: "columnFirstUsed")
        }
    }
}

/// Fix-its offered with the diagnostics.
enum ModelFixIt: FixItMessage {
    case removeAttribute(String)
    case addIgnored
    case replaceLetWithVar
    case useOptional(from: String, to: String)

    var message: String {
        switch self {
        case .removeAttribute(let name): "remove '@\(name)'"
        case .addIgnored: "mark it '@Ignored'"
        case .replaceLetWithVar: "replace 'let' with 'var'"
        case .useOptional(let from, let to): "replace '\(from)' with '\(to)'"
        }
    }

    var fixItID: MessageID {
        let id: String =
            switch self {
            case .removeAttribute: "removeAttribute"
            case .addIgnored: "addIgnored"
            case .replaceLetWithVar: "replaceLetWithVar"
            case .useOptional: "useOptional"
            }
        return MessageID(domain: "ModelSyncMacros", id: id)
    }
}
