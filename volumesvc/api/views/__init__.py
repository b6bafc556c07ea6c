"""Response builders (serializers) shared by more than one handler."""
