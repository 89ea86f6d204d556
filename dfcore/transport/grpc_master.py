"""placeholder"""


class MasterService:
    def __init__(self, transport):
        self.transport = transport

    def install(self):
        pass
