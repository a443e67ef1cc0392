export { generatePrivateKeyPem, makeCertificateRequest, parseCertificateRequest, type CertificateTemplate, type ParsedCertificateRequest } from './csr.js';
export {
  CLIENT_USAGES,
  KUBELET_SERVING_SIGNER,
  KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
  SERVING_USAGES,
  certificateSigningRequestsFor,
  digestedCsrName,
  requestCertificate,
  waitForCertificate,
  type CertificateRequest,
  type CertificateSigningRequests,
  type WaitForCertificateOptions,
} from './csr-client.js';
export { FileCertificateStore, NoCertKeyError, extractPrivateKeyPem, parseCertificatePair, type CertificatePair, type FileCertificateStoreOptions } from './store.js';
export { CertificateManager, rotationDeadline, subjectAltNamesOf, subjectOf, type CertificateManagerOptions, type CertificateStore } from './manager.js';
export {
  BOOTSTRAP_PRIVATE_KEY_FILE,
  isClientConfigStillValid,
  loadClientCert,
  nodeClientTemplate,
  writeKubeconfigFromBootstrapping,
  type LoadClientCertOptions,
} from './bootstrap.js';
