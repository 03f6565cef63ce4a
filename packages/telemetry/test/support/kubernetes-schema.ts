// Checking manifests against the Kubernetes API schemas, offline, with kubernetes-models (and
// @kubernetes-models/prometheus-operator for the monitoring component's custom resources):
//  - its ajv validators (generated from Kubernetes' OpenAPI schemas): types, required fields,
//    formats (quantities, int-or-string), enums;
//  - its TypeScript interfaces of the same schemas, through the compiler's excess-property
//    check: a misspelt or misplaced field (`readinesProbe`, `resources` one level too deep) is
//    an error there, as it is for `kubectl apply` with strict field validation.

import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { resourceId, type Resource } from './kustomize';

/** The Prometheus Operator's custom resources (the monitoring component) have their own package. */
const CUSTOM_RESOURCE_MODELS: Record<string, string> = {
  'monitoring.coreos.com': '@kubernetes-models/prometheus-operator',
};

/** kubernetes-models' module for an apiVersion + kind: `v1` → core, `apps/v1` → apps/v1. */
function modelModule(resource: Resource): string {
  const models = CUSTOM_RESOURCE_MODELS[resource.apiVersion.split('/')[0]] ?? 'kubernetes-models';
  return `${models}/${resource.apiVersion}/${resource.kind}`;
}

/** Errors of the ajv validator of each resource's kind (an empty list when all are valid). */
export function schemaErrors(resources: Resource[]): string[] {
  const errors: string[] = [];
  for (const resource of resources) {
    let Model: new (data: unknown) => { validate(): void };
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      Model = require(modelModule(resource))[resource.kind];
    } catch {
      errors.push(`${resourceId(resource)}: no Kubernetes schema for ${resource.apiVersion} ${resource.kind}`);
      continue;
    }
    try {
      new Model(resource).validate();
    } catch (error) {
      errors.push(`${resourceId(resource)}: ${(error as Error).message}`);
    }
  }
  return errors;
}

/** Fields the Kubernetes types do not have (type errors of the TypeScript check). */
export function unknownFieldErrors(resources: Resource[]): string[] {
  // Inside this package, so that the models npm nested under its node_modules resolve too.
  const cache = path.join(__dirname, '../../node_modules/.cache');
  fs.mkdirSync(cache, { recursive: true });
  const dir = fs.mkdtempSync(path.join(cache, 'k8s-typecheck-'));
  try {
    const lines: string[] = [];
    resources.forEach((resource, index) => {
      lines.push(`import type { I${resource.kind} as T${index} } from '${modelModule(resource)}';`);
      lines.push(`// ${resourceId(resource)}`);
      lines.push(`export const r${index}: T${index} = ${JSON.stringify(resource, null, 2)};`);
    });
    const file = path.join(dir, 'manifests.ts');
    fs.writeFileSync(file, lines.join('\n'));
    const program = ts.createProgram([file], {
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      module: ts.ModuleKind.CommonJS,
      moduleResolution: ts.ModuleResolutionKind.Node10,
      target: ts.ScriptTarget.ES2022,
      types: [],
    });
    return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
      const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
      if (!diagnostic.file || diagnostic.start === undefined) return message;
      // Name the resource: the nearest "// Kind/name" comment above the error.
      const before = diagnostic.file.text.slice(0, diagnostic.start);
      const owner = before.slice(before.lastIndexOf('\n// ') + 4).split('\n')[0];
      return `${owner}: ${message}`;
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
