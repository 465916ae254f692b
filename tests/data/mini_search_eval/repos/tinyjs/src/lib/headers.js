// Normalize HTTP header names to lower case and merge duplicate headers.
export function normalizeHeaders(headers) {
  const merged = {};
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase();
    merged[key] = merged[key] ? `${merged[key]}, ${value}` : value;
  }
  return merged;
}
