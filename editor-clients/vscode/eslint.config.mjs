// @ts-check
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "out/", "node_modules/", "tools/", "esbuild.mjs", "eslint.config.mjs"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
      // Only host.ts may touch the vscode API (DESIGN §3.6); other modules may use its types.
      "@typescript-eslint/no-restricted-imports": [
        "error",
        { paths: [{ name: "vscode", message: "Call the vscode API through host.ts.", allowTypeImports: true }] },
      ],
    },
  },
  {
    // node:test's describe/it return promises the runner itself awaits.
    files: ["test/**/*.ts"],
    rules: { "@typescript-eslint/no-floating-promises": "off" },
  },
  {
    files: ["src/host.ts"],
    rules: { "@typescript-eslint/no-restricted-imports": "off" },
  },
);
