"""The knowledge base's front half: reading documents (files, folders, URLs) into text pages for the store,
which chunks, embeds and searches them (``Store.documents.add`` / ``search_documents``)."""
