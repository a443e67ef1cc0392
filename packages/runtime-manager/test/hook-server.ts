// A local HTTP(S) server for httpGet lifecycle hook tests: records each request, answers with a handler.
import * as http from 'node:http';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';

/** A self-signed certificate (CN lifecycle-hook-test): the kubelet must not verify it, as Go does not. */
const TEST_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgEh1g9Y0/wFnUPwA5
VaQT6up38U0G4d4s0vieqJiWYKyhRANCAAQ/klhbahlbqSrvWey6FO7lFwnJBJPW
oVt9MgzR38OiBzVlPJ+SEyEg66JD8ALbhg57v/J7LNrFeF0ew5n8PCKh
-----END PRIVATE KEY-----
`;
const TEST_CERT = `-----BEGIN CERTIFICATE-----
MIIBkzCCATmgAwIBAgIUfGykJ/S47nquP1futRQQsJtrA/EwCgYIKoZIzj0EAwIw
HjEcMBoGA1UEAwwTbGlmZWN5Y2xlLWhvb2stdGVzdDAgFw0yNjExMjQyMTU4MjVa
GA8yMTI2MTAzMTIxNTgyNVowHjEcMBoGA1UEAwwTbGlmZWN5Y2xlLWhvb2stdGVz
dDBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABD+SWFtqGVupKu9Z7LoU7uUXCckE
k9ahW30yDNHfw6IHNWU8n5ITISDrokPwAtuGDnu/8nss2sV4XR7Dmfw8IqGjUzBR
MB0GA1UdDgQWBBRgfUfHogc+flT769nPGFVUiqlpTTAfBgNVHSMEGDAWgBRgfUfH
ogc+flT769nPGFVUiqlpTTAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0gA
MEUCIGiUj5TIEnGSQwnkB+H6ibMSduhqdQkkNQqug+8X29VNAiEA9fvYDQDb3M6n
tOgxzZxRcwd654Gwcterp3IyYehHlJw=
-----END CERTIFICATE-----
`;

export interface SeenRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
}

export type HookHandler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

export interface HookServer {
  port: number;
  requests: SeenRequest[];
  /** Replaces how the server answers; default 200 "ok". */
  handle(handler: HookHandler): void;
  /** Resolves with the next request once it has arrived. */
  nextRequest(): Promise<SeenRequest>;
  close(): Promise<void>;
}

export async function startHookServer(opts: { tls?: boolean } = {}): Promise<HookServer> {
  const requests: SeenRequest[] = [];
  let handler: HookHandler = (_req, res) => res.end('ok');
  const arrivals: Array<(r: SeenRequest) => void> = [];
  const listener = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, rawHeaders: req.rawHeaders };
    requests.push(seen);
    arrivals.shift()?.(seen);
    handler(req, res);
  };
  const server = opts.tls ? https.createServer({ key: TEST_KEY, cert: TEST_CERT }, listener) : http.createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    handle(h) {
      handler = h;
    },
    nextRequest() {
      return new Promise((resolve) => arrivals.push(resolve));
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** A TCP port nothing listens on: bound once, then released. */
export async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
