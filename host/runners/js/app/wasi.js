// The imports the runner binds, in one place: the WASI interfaces it calls
// itself (build.sh writes the host's WASI version for @WASI@) and the sbx
// world's. componentize-js binds each named import to the component's.
export { getArguments, getEnvironment } from 'wasi:cli/environment@@WASI@';
export { getStdout } from 'wasi:cli/stdout@@WASI@';
export { getStderr } from 'wasi:cli/stderr@@WASI@';
export { getRandomBytes } from 'wasi:random/random@@WASI@';
export { fetch as netFetch } from 'sbx:agent/net@0.1.0';
export {
  call as toolCall,
  granted as toolsGranted,
  definitions as toolsDefinitions,
} from 'sbx:agent/tools@0.1.0';
export {
  get as kvGet,
  put as kvPut,
  delete as kvDelete,
  list as kvList,
} from 'sbx:agent/kv@0.1.0';
export {
  read as fsRead,
  write as fsWrite,
  list as fsList,
  stat as fsStat,
  remove as fsRemove,
  mkdir as fsMkdir,
} from 'sbx:agent/fs@0.1.0';
export { exitCode, scriptFailed } from 'sbx:agent/outcome@0.1.0';
