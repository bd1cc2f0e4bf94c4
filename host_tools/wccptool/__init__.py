"""Host tools for the WCCPv2 redirector: the `wccp` command line."""
