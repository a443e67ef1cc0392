import t from 'tap';
import { ApiException } from '@kubernetes/client-node';
import {
  apiErrorCode,
  apiErrorMessage,
  apiErrorReason,
  errorText,
  isAlreadyExists,
  isApiError,
  isConflict,
  isGone,
  isInvalid,
  isNotFound,
} from '../src/index.js';

const status = (code: number, reason: string, message: string) =>
  JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });

/** What client-node 1.x throws: a message with the whole response (body and headers), code and body. */
const apiException = (code: number, reason: string, message: string) =>
  new ApiException(code, `HTTP-Code: ${code}\nMessage: Unknown API Status Code!\nBody: ${JSON.stringify(status(code, reason, message))}\nHeaders: {"connection":"close"}`, status(code, reason, message), { connection: 'close' });

t.test('client-node ApiException: code, reason and a one-line message', async (t) => {
  const notFound = apiException(404, 'NotFound', 'nodes "node-1" not found');
  t.equal(apiErrorCode(notFound), 404);
  t.equal(apiErrorReason(notFound), 'NotFound');
  t.equal(apiErrorMessage(notFound), 'nodes "node-1" not found', 'the Status message, as Go prints a StatusError');
  t.ok(isApiError(notFound));
  t.ok(isNotFound(notFound));
  t.equal(errorText(notFound), 'nodes "node-1" not found', 'log lines carry the Status message, not headers and body');
});

t.test('409: a conflict and an already-exists are told apart by reason', async (t) => {
  const conflict = apiException(409, 'Conflict', 'Operation cannot be fulfilled on pods "web": the object has been modified');
  const exists = apiException(409, 'AlreadyExists', 'pods "web" already exists');
  t.ok(isConflict(conflict));
  t.notOk(isAlreadyExists(conflict));
  t.ok(isAlreadyExists(exists));
  t.notOk(isConflict(exists));
  t.ok(isConflict({ code: 409 }), 'a bare 409 (no Status body) counts as a conflict');
});

t.test('other shapes: statusCode, body objects, non-JSON bodies, transport errors', async (t) => {
  t.equal(apiErrorCode({ statusCode: 410 }), 410);
  t.ok(isGone({ statusCode: 410 }));
  t.ok(isGone({ code: 410 }));
  t.ok(isInvalid({ code: 422 }));
  t.equal(apiErrorReason({ reason: 'Expired' }), 'Expired');
  t.equal(apiErrorReason({ code: 500, body: { reason: 'InternalError' } }), 'InternalError');
  t.equal(apiErrorMessage({ code: 502, body: '<html>bad gateway</html>' }), 'HTTP 502: <html>bad gateway</html>');
  t.equal(apiErrorMessage({ code: 503, body: '' }), 'HTTP 503');
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });
  t.equal(apiErrorCode(refused), undefined, 'a string errno code is not an HTTP status');
  t.notOk(isApiError(refused));
  t.equal(apiErrorMessage(refused), 'connect ECONNREFUSED 127.0.0.1:6443');
  t.equal(errorText(refused), 'connect ECONNREFUSED 127.0.0.1:6443');
  t.notOk(isGone(null));
  t.notOk(isNotFound(new Error('x')));
  t.equal(apiErrorMessage('plain'), 'plain');
});
