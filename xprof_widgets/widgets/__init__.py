"""The notebook widgets: thin anywidget classes over the analysis and trace layers."""
