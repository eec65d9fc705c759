"""The knowledge base's front half: reading documents (files, folders, URLs) into text pages for the store,
which chunks, embeds and searches them (``Store.add_document`` / ``search_documents``)."""
