// `import ModelSyncSQLite` gives the layers below it and the macros: a model declared with
// `@Model` needs nothing else.
@_exported import ModelSyncJSON
