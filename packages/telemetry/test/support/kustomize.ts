// A renderer for the kustomize features k8s/ uses, so the overlays can be built in a test
// without the kustomize binary: resources (files and kustomization folders), components,
// namespace, labels (without selectors), images, and patches (strategic merge, with or without a target,
// and JSON 6902 operations with a target). A kustomization using anything else is refused,
// so the renderer can never silently ignore part of a manifest.

import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';

export interface Resource {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: any;
}

const SUPPORTED_FIELDS = new Set([
  'apiVersion',
  'kind',
  'resources',
  'components',
  'namespace',
  'labels',
  'images',
  'patches',
]);
const CLUSTER_SCOPED_KINDS = new Set([
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'PersistentVolume',
  'StorageClass',
  'PriorityClass',
  'IngressClass',
]);
/** Lists that strategic merge patches merge item by item (Kubernetes' patchMergeKey), not replace. */
const MERGE_KEYS: Record<string, string> = {
  containers: 'name',
  initContainers: 'name',
  env: 'name',
  volumes: 'name',
  volumeMounts: 'mountPath',
};

interface PatchTarget {
  kind?: string;
  name?: string;
  labelSelector?: string;
}

interface Kustomization {
  kind?: string;
  resources?: string[];
  components?: string[];
  namespace?: string;
  labels?: { pairs: Record<string, string>; includeSelectors?: boolean; includeTemplates?: boolean }[];
  images?: { name: string; newName?: string; newTag?: string; digest?: string }[];
  patches?: { path?: string; patch?: string; target?: PatchTarget }[];
}

export function readYamlDocuments(file: string): any[] {
  return YAML.parseAllDocuments(fs.readFileSync(file, 'utf8'))
    .map((document) => {
      if (document.errors.length) throw new Error(`${file}: ${document.errors[0].message}`);
      return document.toJS();
    })
    .filter((value) => value !== null && value !== undefined);
}

/**
 * The resources a kustomization (or, with `inherited`, a Component applied on top of them)
 * renders to. As kustomize: resources, then each component in turn (its resources added, its
 * transformers applied to everything so far), then the kustomization's own transformers.
 */
export function renderKustomization(dir: string, inherited?: Resource[]): Resource[] {
  const file = path.join(dir, 'kustomization.yaml');
  if (!fs.existsSync(file)) throw new Error(`${dir} has no kustomization.yaml`);
  const kustomization = YAML.parse(fs.readFileSync(file, 'utf8')) as Kustomization;
  for (const field of Object.keys(kustomization)) {
    if (!SUPPORTED_FIELDS.has(field))
      throw new Error(`${file}: kustomize field "${field}" is not supported by this renderer`);
  }

  const isComponent = kustomization.kind === 'Component';
  if (isComponent !== (inherited !== undefined))
    throw new Error(
      `${file}: ${isComponent ? 'a Component is listed under components, not resources' : 'only a Component can be listed under components'}`,
    );
  let resources: Resource[] = [...(inherited ?? [])];
  for (const entry of kustomization.resources ?? []) {
    const target = path.resolve(dir, entry);
    if (fs.statSync(target).isDirectory()) resources.push(...renderKustomization(target));
    else resources.push(...(readYamlDocuments(target) as Resource[]));
  }
  const seen = new Set<string>();
  for (const resource of resources) {
    const id = resourceId(resource);
    if (seen.has(id)) throw new Error(`${file}: ${id} is defined twice`);
    seen.add(id);
  }
  for (const entry of kustomization.components ?? [])
    resources = renderKustomization(path.resolve(dir, entry), resources);

  for (const entry of kustomization.patches ?? []) {
    const text = entry.path ? fs.readFileSync(path.resolve(dir, entry.path), 'utf8') : entry.patch;
    if (!text) throw new Error(`${file}: a patch needs a path or an inline patch`);
    const documents = YAML.parseAllDocuments(text).map((document) => document.toJS());
    if (documents.length === 1 && Array.isArray(documents[0])) {
      if (!entry.target) throw new Error(`${file}: a JSON 6902 patch needs a target`);
      const matched = resources.filter((resource) => matches(resource, entry.target!));
      if (!matched.length)
        throw new Error(`${file}: no resource matches the patch target ${JSON.stringify(entry.target)}`);
      resources = resources.map((resource) =>
        matched.includes(resource) ? applyJson6902(resource, documents[0]) : resource,
      );
      continue;
    }
    for (const patch of documents as Resource[]) {
      const target = entry.target ?? { kind: patch.kind, name: patch.metadata?.name };
      const matched = resources.filter(
        (resource) => matches(resource, target) && (entry.target || sameGroup(resource, patch)),
      );
      if (!matched.length)
        throw new Error(`${file}: no resource matches the patch for ${patch.kind}/${patch.metadata?.name}`);
      resources = resources.map((resource) => {
        if (!matched.includes(resource)) return resource;
        const { metadata, ...rest } = patch;
        const { name: _name, ...metadataRest } = metadata ?? {};
        return strategicMerge(resource, {
          ...rest,
          metadata: metadataRest,
          apiVersion: resource.apiVersion,
          kind: resource.kind,
        }) as Resource;
      });
    }
  }

  if (kustomization.namespace) {
    for (const resource of resources) {
      if (!CLUSTER_SCOPED_KINDS.has(resource.kind)) resource.metadata.namespace = kustomization.namespace;
    }
  }
  for (const label of kustomization.labels ?? []) {
    if (label.includeSelectors)
      throw new Error(`${file}: labels with includeSelectors are not supported by this renderer`);
    for (const resource of resources) {
      resource.metadata.labels = { ...resource.metadata.labels, ...label.pairs };
      const template = podTemplate(resource);
      if (label.includeTemplates && template)
        template.metadata = { ...template.metadata, labels: { ...template.metadata?.labels, ...label.pairs } };
    }
  }
  for (const image of kustomization.images ?? []) {
    for (const container of resources.flatMap(containersOf)) {
      if (imageName(container.image) !== image.name) continue;
      const name = image.newName ?? image.name;
      const currentTag = /:([^:/@]+)$/.exec(container.image.split('@')[0])?.[1];
      container.image = image.digest ? `${name}@${image.digest}` : `${name}:${image.newTag ?? currentTag ?? 'latest'}`;
    }
  }
  return resources;
}

export function resourceId(resource: Resource): string {
  return `${resource.kind}/${resource.metadata?.namespace ? `${resource.metadata.namespace}/` : ''}${resource.metadata?.name}`;
}

function sameGroup(resource: Resource, patch: Resource): boolean {
  const group = (apiVersion: string) => (apiVersion.includes('/') ? apiVersion.split('/')[0] : '');
  return !patch.apiVersion || group(resource.apiVersion) === group(patch.apiVersion);
}

function matches(resource: Resource, target: PatchTarget): boolean {
  if (target.kind && resource.kind !== target.kind) return false;
  if (target.name && resource.metadata.name !== target.name) return false;
  if (target.labelSelector) {
    for (const requirement of target.labelSelector.split(',')) {
      const [key, value] = requirement.split('=').map((part) => part.trim());
      if (resource.metadata.labels?.[key] !== value) return false;
    }
  }
  return true;
}

function isObject(value: unknown): value is Record<string, any> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Kubernetes' strategic merge: maps merge, null deletes, keyed lists merge by key, other lists are replaced. */
export function strategicMerge(base: any, patch: any, field?: string): any {
  if (patch === null) return undefined;
  if (isObject(base) && isObject(patch)) {
    const merged: Record<string, any> = { ...base };
    for (const [key, value] of Object.entries(patch)) {
      const next = strategicMerge(base[key], value, key);
      if (next === undefined) delete merged[key];
      else merged[key] = next;
    }
    return merged;
  }
  const mergeKey = field ? MERGE_KEYS[field] : undefined;
  if (Array.isArray(base) && Array.isArray(patch) && mergeKey) {
    const merged = base.map((item) => ({ ...item }));
    for (const item of patch) {
      const index = merged.findIndex((existing) => existing[mergeKey] === item[mergeKey]);
      if (index === -1) merged.push(item);
      else merged[index] = strategicMerge(merged[index], item);
    }
    return merged;
  }
  return structuredClone(patch);
}

function pointerParts(pointer: string): string[] {
  return pointer
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
}

export function applyJson6902(
  resource: Resource,
  operations: { op: string; path: string; value?: unknown }[],
): Resource {
  const document = structuredClone(resource);
  for (const operation of operations) {
    const parts = pointerParts(operation.path);
    const last = parts.pop()!;
    let parent: any = document;
    for (const part of parts) {
      parent = parent?.[Array.isArray(parent) ? Number(part) : part];
      if (parent === undefined)
        throw new Error(`JSON 6902 ${operation.op}: ${operation.path} does not exist in ${resourceId(resource)}`);
    }
    const exists = Array.isArray(parent)
      ? Number(last) < parent.length
      : Object.prototype.hasOwnProperty.call(parent, last);
    switch (operation.op) {
      case 'add':
        if (Array.isArray(parent))
          parent.splice(last === '-' ? parent.length : Number(last), 0, structuredClone(operation.value));
        else parent[last] = structuredClone(operation.value);
        break;
      case 'replace':
        if (!exists) throw new Error(`JSON 6902 replace: ${operation.path} does not exist in ${resourceId(resource)}`);
        parent[Array.isArray(parent) ? Number(last) : last] = structuredClone(operation.value);
        break;
      case 'remove':
        if (!exists) throw new Error(`JSON 6902 remove: ${operation.path} does not exist in ${resourceId(resource)}`);
        if (Array.isArray(parent)) parent.splice(Number(last), 1);
        else delete parent[last];
        break;
      default:
        throw new Error(`JSON 6902 operation ${operation.op} is not supported by this renderer`);
    }
  }
  return document;
}

export interface IngressRoute {
  /** The Ingress's name, and the host of the rule the path is in. */
  ingress: string;
  host?: string;
  path: string;
  pathType: 'Exact' | 'Prefix' | 'ImplementationSpecific';
  backend: { service: { name: string; port: { name?: string; number?: number } } };
}

/** Every path of every rule of the Ingresses among `resources`. */
export function ingressRoutes(resources: Resource[]): IngressRoute[] {
  return resources
    .filter((resource) => resource.kind === 'Ingress')
    .flatMap((ingress) =>
      (ingress.spec.rules as { host?: string; http: { paths: any[] } }[]).flatMap((rule) =>
        rule.http.paths.map((route) => ({ ingress: ingress.metadata.name, host: rule.host, ...route })),
      ),
    );
}

/** The pod template of a workload (Deployment, StatefulSet, DaemonSet, Job), if any. */
export function podTemplate(resource: Resource): { metadata?: any; spec: any } | undefined {
  if (resource.kind === 'CronJob') return resource.spec?.jobTemplate?.spec?.template;
  return resource.spec?.template;
}

export function containersOf(resource: Resource): { name: string; image: string; [field: string]: any }[] {
  const spec = resource.kind === 'Pod' ? resource.spec : podTemplate(resource)?.spec;
  return [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])];
}

export function imageName(image: string): string {
  const withoutDigest = image.split('@')[0];
  const tag = /:([^:/]+)$/.exec(withoutDigest);
  return tag ? withoutDigest.slice(0, tag.index) : withoutDigest;
}
