export { listWorkspace, publishedPackages, internalClosure, readPackageJson, DEPENDENCY_FIELDS, type PackageJson, type WorkspacePackage } from './workspace.js';
export { lintDependencies, importedSpecifiers, packageNameOf, type DependencyProblem } from './lint-deps.js';
export { extractReadmeExamples, type ReadmeExample } from './readme-examples.js';
export {
  run,
  toolEntry,
  packPackages,
  tarballFiles,
  installConsumer,
  javascriptSubpaths,
  subpathSpecifier,
  writeConsumerTsconfig,
  CONSUMER_TSCONFIGS,
  type CommandResult,
} from './consumer.js';
