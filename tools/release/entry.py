"""The script PyInstaller freezes: the provider's entry point (`terraform-provider-liqo`)."""

from provider.__main__ import main

main()
