/// <reference types="vitest/config" />
import { defineConfig } from "vite";

// The build is embedded in the binary (console/embed.go) and committed:
// file names carry a hash of their content, and nothing in the output
// depends on the time or the machine, so that a rebuild of the same
// sources gives the same bytes (console/ci.sh checks it).
export default defineConfig({
  base: "/console/",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
  },
  test: {
    include: ["test/*.test.ts"],
    environment: "node",
  },
});
