// npm run check:cycles: fails on any import cycle among the workspace's TypeScript sources (the files of
// tsconfig.json, across package boundaries too: @teamchat/* resolve to their sources). Type-only imports
// count as well (a type cycle still ties two modules together); --runtime-only leaves them out.
// Dynamic import() and require() do not count. Uses the TypeScript compiler API (already a dependency).
import path from 'node:path';
import fs from 'node:fs';
import ts from 'typescript';

const withTypes = !process.argv.includes('--runtime-only');
const root = path.resolve(import.meta.dirname, '..');
const configPath = path.join(root, 'tsconfig.json');
const config = ts.readConfigFile(configPath, ts.sys.readFile);
const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
const inScope = (file) => !file.includes('/node_modules/') && !file.includes('/packages/db/src/generated/');
const files = parsed.fileNames.map((file) => path.resolve(file)).filter(inScope);
const known = new Set(files);
const host = ts.createCompilerHost(parsed.options);
const resolutionCache = ts.createModuleResolutionCache(root, (name) => name, parsed.options);

/** Module specifiers a file imports (by type too, unless --runtime-only). */
function runtimeImports(source) {
  const specifiers = [];
  const visit = (node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const typeOnly =
        clause?.isTypeOnly ||
        (clause &&
          !clause.name &&
          clause.namedBindings &&
          ts.isNamedImports(clause.namedBindings) &&
          clause.namedBindings.elements.length > 0 &&
          clause.namedBindings.elements.every((e) => e.isTypeOnly));
      if (!typeOnly || withTypes) specifiers.push(node.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const typeOnly =
        node.isTypeOnly ||
        (node.exportClause &&
          ts.isNamedExports(node.exportClause) &&
          node.exportClause.elements.length > 0 &&
          node.exportClause.elements.every((e) => e.isTypeOnly));
      if (!typeOnly || withTypes) specifiers.push(node.moduleSpecifier.text);
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      (!node.isTypeOnly || withTypes) &&
      ts.isStringLiteral(node.moduleReference.expression)
    ) {
      specifiers.push(node.moduleReference.expression.text);
    }
    // Dynamic import() and require() are deliberate lazy loads: they run after both modules are evaluated.
    ts.forEachChild(node, visit);
  };
  visit(source);
  return specifiers;
}

const edges = new Map();
for (const file of files) {
  const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const targets = new Set();
  for (const specifier of runtimeImports(source)) {
    const resolved = ts.resolveModuleName(specifier, file, parsed.options, host, resolutionCache).resolvedModule;
    if (!resolved) continue;
    // Workspace packages resolve through their node_modules symlink to their own sources.
    const target = fs.realpathSync(resolved.resolvedFileName);
    if (known.has(target) && target !== file) targets.add(target);
  }
  edges.set(file, [...targets]);
}

// Tarjan's strongly connected components: every component of more than one file holds a cycle.
let index = 0;
const state = new Map();
const stack = [];
const components = [];
function connect(file) {
  const entry = { index, low: index, onStack: true };
  index += 1;
  state.set(file, entry);
  stack.push(file);
  for (const target of edges.get(file)) {
    const seen = state.get(target);
    if (!seen) {
      connect(target);
      entry.low = Math.min(entry.low, state.get(target).low);
    } else if (seen.onStack) {
      entry.low = Math.min(entry.low, seen.index);
    }
  }
  if (entry.low === entry.index) {
    const component = [];
    let member;
    do {
      member = stack.pop();
      state.get(member).onStack = false;
      component.push(member);
    } while (member !== file);
    if (component.length > 1) components.push(component);
  }
}
for (const file of files) if (!state.has(file)) connect(file);

/** One shortest cycle through the component's first file, for the message. */
function cycleIn(component) {
  const members = new Set(component);
  const start = [...component].sort()[0];
  const previous = new Map([[start, null]]);
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.shift();
    for (const target of edges.get(file)) {
      if (target === start) {
        const cycle = [file];
        for (let at = previous.get(file); at; at = previous.get(at)) cycle.unshift(at);
        return [...cycle, start];
      }
      if (members.has(target) && !previous.has(target)) {
        previous.set(target, file);
        queue.push(target);
      }
    }
  }
  return component;
}

const relative = (file) => path.relative(root, file);
if (components.length === 0) {
  console.log(`check:cycles: no import cycle among ${files.length} files`);
} else {
  console.error(`check:cycles: ${components.length} import cycle(s):`);
  for (const component of components) {
    console.error(`  ${cycleIn(component).map(relative).join('\n    → ')}`);
    if (component.length > 2) {
      console.error(`    (${component.length} files in this tangle: ${component.map(relative).sort().join(', ')})`);
    }
  }
  process.exitCode = 1;
}
