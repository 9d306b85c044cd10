//! Discovery: TypeScript from JSON Schema, search, describe, and the tool the model sees.
