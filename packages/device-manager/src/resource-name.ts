// v1helper.IsExtendedResourceName, which the Registration service checks a plugin's resource name with.

const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** validation.IsQualifiedName: `[prefix/]name`, the prefix a DNS subdomain (<= 253), the name <= 63 characters. */
export function isQualifiedName(value: string): boolean {
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) name = parts[0];
  else if (parts.length === 2) {
    const [prefix] = parts;
    name = parts[1];
    if (prefix.length === 0 || prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix)) return false;
  } else return false;
  return name.length > 0 && name.length <= 63 && QUALIFIED_NAME.test(name);
}

/** v1helper.IsNativeResource: unprefixed, or in the kubernetes.io/ namespace. */
export function isNativeResource(name: string): boolean {
  return !name.includes('/') || name.includes('kubernetes.io/');
}

/** v1helper.IsExtendedResourceName: not native, not `requests.*`, and `requests.<name>` is a qualified name. */
export function isExtendedResourceName(name: string): boolean {
  if (isNativeResource(name) || name.startsWith('requests.')) return false;
  return isQualifiedName(`requests.${name}`);
}
