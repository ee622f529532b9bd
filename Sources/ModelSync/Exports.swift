// The umbrella module: `import ModelSync` gives every layer and the macros.
@_exported import ModelSyncCore
@_exported import ModelSyncJSON
@_exported import ModelSyncSQLite
@_exported import ModelSyncRemote
@_exported import ModelSyncStorage
@_exported import ModelSyncProtocol
