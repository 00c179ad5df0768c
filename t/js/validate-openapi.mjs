// node t/js/validate-openapi.mjs DOCUMENT.json [SCHEMA-NAME INSTANCE.json ...]
//
// Validates an OpenAPI document with @seriousme/openapi-schema-validator
// (the OpenAPI 3.1 meta-schema, $refs resolved), then checks every schema
// of components.schemas against the JSON Schema 2020-12 meta-schema with
// Ajv, and compiles it. Each SCHEMA-NAME INSTANCE pair then validates a
// JSON instance (e.g. a real API response) against that component.
// Exit status 0 when everything is valid; 1 with the errors printed.
import { readFileSync } from "node:fs";
import { Validator } from "@seriousme/openapi-schema-validator";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const [file, ...pairs] = process.argv.slice(2);
if (!file || pairs.length % 2 !== 0) {
  console.error("usage: validate-openapi.mjs DOCUMENT.json [SCHEMA-NAME INSTANCE.json ...]");
  process.exit(2);
}

const problems = [];
const doc = JSON.parse(readFileSync(file, "utf8"));

const validator = new Validator();
const res = await validator.validate(doc);
if (!res.valid) problems.push(["OpenAPI 3.1 meta-schema", res.errors]);

// The document's schemas, under their $ref address, so that refs between
// components resolve; "discriminator" is OpenAPI's, not JSON Schema's.
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addKeyword("discriminator");
const wrapper = { $id: "openapi:doc", components: doc.components ?? {} };
for (const [name, schema] of Object.entries(doc.components?.schemas ?? {})) {
  if (!ajv.validateSchema(schema))
    problems.push([`components.schemas.${name} (JSON Schema 2020-12)`, ajv.errors]);
}
if (problems.length === 0) {
  try {
    ajv.addSchema(wrapper);
    for (const name of Object.keys(doc.components?.schemas ?? {}))
      ajv.getSchema(`openapi:doc#/components/schemas/${name}`);
  } catch (e) {
    problems.push(["compiling components.schemas", e.message]);
  }
}

for (let i = 0; problems.length === 0 && i < pairs.length; i += 2) {
  const [name, instanceFile] = [pairs[i], pairs[i + 1]];
  const check = ajv.getSchema(`openapi:doc#/components/schemas/${name}`);
  if (!check) {
    problems.push([`instance ${instanceFile}`, `no schema ${name}`]);
    continue;
  }
  const instance = JSON.parse(readFileSync(instanceFile, "utf8"));
  if (!check(instance)) problems.push([`${instanceFile} against ${name}`, check.errors]);
}

if (problems.length > 0) {
  for (const [what, errors] of problems)
    console.log(`invalid: ${what}:\n${JSON.stringify(errors, null, 2)}`);
  process.exit(1);
}
console.log(`valid: OpenAPI ${validator.version ?? "?"}, ${Object.keys(doc.paths ?? {}).length} paths`);
