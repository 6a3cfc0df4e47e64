"""The vector store port on LanceDB."""
