export { listWorkspace, publishedPackages, internalClosure, readPackageJson, DEPENDENCY_FIELDS, type PackageJson, type WorkspacePackage } from './workspace.js';
export { lintDependencies, importedSpecifiers, packageNameOf, type DependencyProblem } from './lint-deps.js';
export { extractReadmeExamples, extractInstallLine, readmeStructure, TYPEDOC_SITE, type ReadmeExample, type InstallLine, type ReadmeStructure } from './readme-examples.js';
export {
  run,
  toolEntry,
  packPackages,
  tarballFiles,
  installConsumer,
  installLinkedProjects,
  javascriptSubpaths,
  subpathSpecifier,
  writeConsumerTsconfig,
  CONSUMER_TSCONFIGS,
  extractTarball,
  unresolvedSources,
  writeLoadRecorder,
  importRecordingLoads,
  requireEach,
  measureImport,
  type CommandResult,
  type LinkedProject,
  type ImportCost,
  type RecordedImport,
  type RequireOutcome,
} from './consumer.js';
