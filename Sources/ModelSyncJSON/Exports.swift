// `import ModelSyncJSON` gives the models' core too: the generated code names it.
@_exported import ModelSyncCore
